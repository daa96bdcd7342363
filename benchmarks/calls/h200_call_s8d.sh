#!/usr/bin/env bash
# Session 8, last call: re-bench the fp8_ds_mla and model1 rows at H = 16 and 32, which still show
# a 2026-12-02 run with configs the table has since replaced. One bench run per (format, heads).
# $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
end=$(( $(date +%s) + ${LIMIT:-240} ))
for fh in "fp8_ds_mla 16" "model1 16" "fp8_ds_mla 32" "model1 32"; do
  set -- $fh
  left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break
  bench_rows $1 $2 1,4,16,64,128,256 $left
done
pack_out
