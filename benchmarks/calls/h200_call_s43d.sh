#!/usr/bin/env bash
# Prepared in session 43, for the H200 (on another card it stops at once: the H200's table needs the H200's times):
# GluonKernel.raw, the raw-row kernel the runtime runs for 16-head one-split Gluon entries with an fp8_e4m3 cache
# (session 42) or an fp8_ds_mla one (session 43). The suite's fp8_ds_mla, fp8 and fp8_nope rows at T=128 and 256 with
# 16 heads benched against FlashInfer (issue 7's "any fp8 format, T=256, H=16" rows), to merge into
# benchmarks/results/NVIDIA_H200.json (benchmarks/merge_bench.py), then raw_rows.py of the three formats (raw against
# the dequantizing kernel, same config, one process). $OUT is packed after each step, so a cut-off keeps the steps
# before it.
#   bash benchmarks/calls/h200_call_s43d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
bench_rows fp8_ds_mla 16 128,256 100; pack_now
bench_rows fp8 16 128,256 120; pack_now
bench_rows fp8_nope 16 128,256 100; pack_now
raw_rows raw_rows 200 --formats fp8,fp8_nope,fp8_ds_mla --no-h32
pack_out
