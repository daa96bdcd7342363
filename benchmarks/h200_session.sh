#!/usr/bin/env bash
# Session 14's fourth device call on the H200, for issue 7: the fp8-format bench rows beside FlashInfer
# with the table of calls 1-3 (the narrow kernel's rows at 16 and 32 heads first, then the rows that were
# stale since session 13: 64 heads, T=4096, fp8 NoPE at 128 heads).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
bench_within 330 "" "fp8 16 1,4,16,64,128,256" "fp8_ds_mla 16 64,128,256" "model1 16 64,128,256" \
  "fp8_nope 16 64,128,256" "fp8 32 64,128,256" "fp8_ds_mla 32 64,128,256" "model1 32 64,128,256" \
  "fp8_nope 32 64,128,256" "fp8 64 1,4,16,64,128,256" "fp8_ds_mla 64 16,64,128,256" "model1 64 16,64,128,256" \
  "fp8_nope 128 128,4096" "fp8 128 4096"
pack_out
