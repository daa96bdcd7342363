#!/usr/bin/env bash
# Session 8, third call: the suite rows re-tuned in the second call (H = 64 at T = 1..256 for
# the four formats, bf16 H = 16 T = 256), one bench run per (format, heads) so a run cut by
# LIMIT keeps the ones before it. Run after the tuned table is merged. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
bench_within ${LIMIT:-540} "" "bf16 64 1,4,16,64,128,256" "fp8 64 1,4,16,64,128,256" "fp8_ds_mla 64 1,4,16,64,128,256" "model1 64 1,4,16,64,128,256"
pack_out
