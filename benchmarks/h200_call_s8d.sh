#!/usr/bin/env bash
# Session 8, last call: re-bench the fp8_ds_mla and model1 rows at H = 16 and 32, which still show
# a 2026-12-02 run with configs the table has since replaced. One bench run per (format, heads).
# $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
end=$(( $(date +%s) + ${LIMIT:-240} ))
for fh in "fp8_ds_mla 16" "model1 16" "fp8_ds_mla 32" "model1 32"; do
  set -- $fh
  left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break
  timeout $left python3 -m sparsemla.cli bench --no-prefill --formats $1 --tokens 1,4,16,64,128,256 --heads $2 \
    --out "$OUT/bench_$1_h$2" 2>&1 | grep -v Warn > "$OUT/bench_$1_h$2.log"
  echo "== bench $1 H=$2 rc=$?"; grep "^| $1 " "$OUT/bench_$1_h$2.log" | sort -u | cut -c1-100
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
