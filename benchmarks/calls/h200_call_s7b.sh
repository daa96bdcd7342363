#!/usr/bin/env bash
# Session 7: the suite rows re-tuned with l2_prefetch (h200_call_l2tune.sh): H = 128 at every
# decode T and T = 32, and H = 16 at T = 256, one bench run per (format, heads) so a run cut by LIMIT keeps
# the ones before it. Run after the tuned table is merged. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
rows=()
for f in ${FORMATS:-fp8_ds_mla model1 fp8 bf16}; do rows+=("$f 128 1,4,16,32,64,128,256" "$f 16 256"); done
bench_within ${LIMIT:-540} "" "${rows[@]}"
pack_out
