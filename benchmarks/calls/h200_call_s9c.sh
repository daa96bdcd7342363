#!/usr/bin/env bash
# Session 9, third call: the paging benchmark with cache hints on the copies (stream: evict_first
# loads, .cs stores) and more rows of marks; the bf16 and fp8 rows at H = 16 and 32 (T = 1..256)
# re-tuned with l2_prefetch searched (5 configs per study, the shipped config and its on/off twins
# first), then re-benched with the run's table ($OUT/tuned, which the bench reads before the
# package's), H = 32 first. $OUT is packed into one archive. (The cache hints were removed after
# this call; run again, it measures the current paging benchmark.)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
if [ "${PAGING:-1}" != 0 ]; then
  paging ${PAGING_LIMIT:-100}
fi
PARALLEL=8 bash benchmarks/h200_tune.sh bf16,fp8 ${TRIALS:-5} ${LIMIT_TUNE:-250} "--heads 16,32 --tokens 1,4,16,64,128,256"
bench_within ${LIMIT:-190} "$OUT/tuned" "bf16 32 1,4,16,64,128,256" "fp8 32 1,4,16,64,128,256" "bf16 16 1,4,16,64,128,256" "fp8 16 1,4,16,64,128,256"
pack_out
