#!/usr/bin/env bash
# Session 7: the suite rows re-tuned with l2_prefetch (h200_call_l2tune.sh): H = 128 at every
# decode T and T = 32, and H = 16 at T = 256, one bench run per (format, heads) so a run cut by LIMIT keeps
# the ones before it. Run after the tuned table is merged. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
end=$(( $(date +%s) + ${LIMIT:-540} ))
for f in ${FORMATS:-fp8_ds_mla model1 fp8 bf16}; do
  for ht in "128 1,4,16,32,64,128,256" "16 256"; do
    set -- $ht
    left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break 2
    bench_rows $f $1 $2 $left
  done
done
pack_out
