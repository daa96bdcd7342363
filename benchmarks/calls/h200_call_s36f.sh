#!/usr/bin/env bash
# Session 36, a fourth try at the H200 (calls 2-4 got H100s): the suite's rows whose entries run the wide Gluon
# kernel with split-K merged by the combine kernel, benched against FlashInfer with its bfloat16 partials (as call
# 2 did on the H100). On another card it stops at once: the H200's table needs the H200's times.
# LIMIT_S (default 360) bounds the benching; a run cut off keeps the rows before it.
#   bash benchmarks/calls/h200_call_s36f.sh [LIMIT_S]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
bench_within "${1:-360}" "" "bf16 64,128 4,16" "bf16_nope 64,128 4,16" "fp8 32,64,128 1,4,16" "fp8_nope 32,64,128 1,4,16" \
  "model1 32,64,128 1,4,16" "fp8_ds_mla 32,64,128 1,4,16" "fp8_nope 32 64"
pack_out
