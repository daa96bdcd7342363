#!/usr/bin/env bash
# Session 8, last call: re-bench the fp8_ds_mla and model1 rows at H = 16 and 32, which still show
# a 2026-12-02 run with configs the table has since replaced. One bench run per (format, heads).
# $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
bench_within ${LIMIT:-240} "" "fp8_ds_mla 16 1,4,16,64,128,256" "model1 16 1,4,16,64,128,256" "fp8_ds_mla 32 1,4,16,64,128,256" "model1 32 1,4,16,64,128,256"
pack_out
