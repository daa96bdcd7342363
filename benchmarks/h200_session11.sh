#!/usr/bin/env bash
# Session 20, call 8 (about 5 minutes): the suite's T = 16, 32 and 64 rows of every format beside FlashInfer, with the
# combine a programmatic dependent of Gluon grids of half the SMs or of one wave with at most 4 splits.
#   bash benchmarks/h200_session11.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
bench_within 540 "" "bf16 16,32,64,128 16,32,64" "bf16_nope 16,32,64,128 16,32,64" "fp8 16,32,64,128 16,32,64" \
  "fp8_nope 16,32,64,128 16,32,64" "fp8_ds_mla 16,32,64,128 16,32,64" "model1 16,32,64,128 16,32,64"
pack_out
