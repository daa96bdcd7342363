#!/usr/bin/env bash
# Session 20, call 5 (about 5 minutes): the suite's T = 1 and 4 rows of every format beside FlashInfer, with the
# combine launched as a programmatic dependent of Gluon grids of at most half the SMs (runtime/triton_backend._pdl).
#   bash benchmarks/h200_session9.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
bench_within 540 "" "bf16 16,32,64,128 1,4" "bf16_nope 16,32,64,128 1,4" "fp8 16,32,64,128 1,4" \
  "fp8_nope 16,32,64,128 1,4" "fp8_ds_mla 16,32,64,128 1,4" "model1 16,32,64,128 1,4"
pack_out
