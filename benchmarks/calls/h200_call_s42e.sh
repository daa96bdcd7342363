#!/usr/bin/env bash
# Prepared in session 42, for the H200 (on another card it stops at once: the H200's table needs the H200's times):
# GluonKernel.raw, the raw-row fp8_e4m3 kernel the runtime now runs for 16-head one-split Gluon entries. raw_rows.py
# (raw against the dequantizing kernel, same config, one process), then the suite's fp8 and fp8_nope rows at T=128 and
# 256 with 16 heads benched against FlashInfer (issue 7's "any fp8 format, T=256, H=16" rows), to merge into
# benchmarks/results/NVIDIA_H200.json (benchmarks/merge_bench.py).
#   bash benchmarks/calls/h200_call_s42e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
raw_rows raw_rows 250
bench_rows fp8 16 128,256 150
bench_rows fp8_nope 16 128,256 150
pack_out
