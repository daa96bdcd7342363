#!/usr/bin/env bash
# Session 24, call 9 (issue 7): the suite's rows whose kernel the staged output changes (the wide Gluon kernel
# without split-K, not persistent; call 8: 1.025-1.087x), benched beside FlashInfer, decode rows of every format
# first, then the prefill rows, as far as the call's time goes. Merge the bench JSONs with
# benchmarks/merge_bench.py afterwards; rows not reached keep their older measurement (a slower kernel).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
bench_within 225 "" "bf16 64,128 64,128,256" "bf16_nope 64,128 64,128,256" "fp8 64,128 64,128,256" \
  "fp8_nope 64,128 64,128,256" "model1 64,128 64,128,256" "fp8_ds_mla 64,128 64,128,256" "bf16_nope 64,128 4096" \
  "fp8 64,128 4096" "fp8_nope 64,128 4096" "model1 64,128 4096" "fp8_ds_mla 64,128 4096"
pack_out
