#!/usr/bin/env bash
# Session 9, sixth and seventh calls: bf16_nope at H = 64 and 128 (the seventh: HEADS=32), T = 1..256,
# re-tuned with l2_prefetch searched (5 configs per study, the shipped config and its on/off twins
# first; its rows ran slower than bf16 with rope), then re-benched with the run's table
# ($OUT/tuned). $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
PARALLEL=8 bash benchmarks/h200_tune.sh bf16_nope ${TRIALS:-5} ${LIMIT_TUNE:-150} "--heads ${HEADS:-64,128} --tokens 1,4,16,64,128,256"
rows=()
for h in $(echo ${HEADS:-64,128} | tr , " "); do rows+=("bf16_nope $h 1,4,16,64,128,256"); done
bench_within ${LIMIT:-150} "$OUT/tuned" "${rows[@]}"
pack_out
