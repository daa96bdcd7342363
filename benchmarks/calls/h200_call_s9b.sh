#!/usr/bin/env bash
# Session 9, second call: the paging benchmark with the ticket copy (each program takes its next
# piece of a destination page from a counter) and the fused kernel (mark, compact and copy in
# one cooperative launch), then the fp8_ds_mla and model1 rows at H = 16 and 32 re-benched with
# the table re-tuned in the first call. $OUT is packed into one archive. (The ticket and fused
# copies were removed after this call; run again, it measures the current benchmark.)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
if [ "${PAGING:-1}" != 0 ]; then
  paging ${PAGING_LIMIT:-240}
fi
bench_within ${LIMIT:-300} "" "fp8_ds_mla 32 1,4,16,64,128,256" "fp8_ds_mla 16 1,4,16,64,128,256" "model1 16 1,4,16,64,128,256" "model1 32 1,4,16,64,128,256"
pack_out
