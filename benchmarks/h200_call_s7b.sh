#!/usr/bin/env bash
# Session 7: the suite rows re-tuned with l2_prefetch (h200_call_l2tune.sh): H = 128 at every
# decode T and T = 32, and H = 16 at T = 256, one bench run per (format, heads) so a run cut by LIMIT keeps
# the ones before it. Run after the tuned table is merged. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
end=$(( $(date +%s) + ${LIMIT:-540} ))
for f in ${FORMATS:-fp8_ds_mla model1 fp8 bf16}; do
  for ht in "128 1,4,16,32,64,128,256" "16 256"; do
    set -- $ht
    left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break 2
    timeout $left python3 -m sparsemla.cli bench --no-prefill --formats $f --tokens $2 --heads $1 \
      --out "$OUT/bench_${f}_h$1" 2>&1 | grep -v Warn > "$OUT/bench_${f}_h$1.log"
    echo "== bench $f H=$1 rc=$?"; grep "^| $f " "$OUT/bench_${f}_h$1.log" | sort -u | cut -c1-100
  done
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
