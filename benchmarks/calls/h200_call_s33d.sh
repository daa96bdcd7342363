#!/usr/bin/env bash
# Session 33: issue 7's decode rows on whatever sm90 card comes (H100s came all session), with the H200's tuned
# configs (the reference part's) against FlashInfer in the same process: what an H100 user gets.
#   bash benchmarks/calls/h200_call_s33d.sh [LIMIT_S] [small]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
# (call 4 ran these rows; call 5, `h200_call_s33d.sh 330 small`, the small-T rows of every format at H=128)
if [ "${2:-}" = small ]; then
  bench_within "${1:-330}" "" "bf16 128 4,16" "fp8 128 1,4,16" "fp8_ds_mla 128 1,4,16" "model1 128 1,4,16" \
    "bf16_nope 128 1,4,16" "fp8_nope 128 1,4,16"
else
  bench_within "${1:-420}" "" "bf16 128 1,32,128" "bf16 16 256" "fp8 128 128" "fp8 16 256" "fp8_ds_mla 128 128" \
    "model1 128 128" "bf16_nope 128 128" "fp8_ds_mla 16 256" "model1 16 256"
fi
pack_out
