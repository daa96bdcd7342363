#!/usr/bin/env bash
# Session 45, for the H200 (on another card it stops at once): h200_call_s43d.sh's steps with the rows first,
# for a call with little device time left: the suite's fp8, fp8_nope and fp8_ds_mla T=256 H=16 rows (issue 7's "any
# fp8 format, T=256, H=16", on the raw-row kernel) benched against FlashInfer, then their T=128 rows, then raw_rows.py
# of the three formats (raw against the dequantizing kernel, same config, one process). $OUT is packed after each
# step, so a cut-off keeps the steps before it. Merge the bench runs into benchmarks/results/NVIDIA_H200.json
# (benchmarks/merge_bench.py).
#   bash benchmarks/calls/h200_call_s45b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
bench_rows fp8 16 256 100; pack_now
bench_rows fp8_nope 16 256 80; pack_now
bench_rows fp8_ds_mla 16 256 80; pack_now
bench_rows fp8 16 128 60; pack_now
bench_rows fp8_nope 16 128 60; pack_now
bench_rows fp8_ds_mla 16 128 60; pack_now
raw_rows raw_rows 200 --formats fp8,fp8_nope,fp8_ds_mla --no-h32
pack_out
