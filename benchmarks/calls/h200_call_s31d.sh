#!/usr/bin/env bash
# Prepared at the end of session 31: on an H200, the suite's bench of the model1 rows that GluonKernel.bf16_scale (on for
# model1 since session 31; on an H100 1.00-1.045x) changes, then the fp8 formats' T=1 and T=4 rows at 128 heads (their
# Gluon kernels wait for the stream's previous kernel since session 30, GluonKernel.pdl_wait), against FlashInfer in
# the same process where it runs, for ../results/NVIDIA_H200.md (benchmarks/merge_bench.py). On another GPU the bench
# is skipped: its rows belong to the H200's table.
#   bash benchmarks/calls/h200_call_s31d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
case "$gpu" in
  *H200*) bench_within 540 "" "model1 16 64,128,256" "model1 128 1,4,128" "model1 64 128" "fp8 128 1,4" \
            "fp8_ds_mla 128 1,4" "fp8_nope 128 1,4" ;;
  *) echo "== not an H200: no bench" ;;
esac
pack_out
