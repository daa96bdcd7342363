#!/usr/bin/env bash
# The issue-7 rows at H = 128 (T = 1, 16, 128) with the configs re-tuned in session 6, one bench run
# per format so a run cut by the limit keeps the formats before it. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
end=$(( $(date +%s) + ${LIMIT:-170} ))
for f in bf16 fp8_ds_mla model1 fp8; do
  left=$(( end - $(date +%s) )); [ $left -lt 15 ] && break
  timeout $left python3 -m sparsemla.cli bench --no-prefill --formats $f --tokens 1,16,128 --heads 128 \
    --out "$OUT/bench_$f" 2>&1 | grep -v Warn > "$OUT/bench_$f.log"
  echo "== bench $f rc=$?"; grep "^| $f " "$OUT/bench_$f.log" | cut -c1-120
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
