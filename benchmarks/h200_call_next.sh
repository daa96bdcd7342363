#!/usr/bin/env bash
# Next device call (prepared in session 5): grid vs TPE's confirmation step (both studies of
# each spec are complete in the journal: only the winners are re-measured), the paging
# benchmark with the new mark check and spread copy (and the list-copy grid sweep), and the
# fp8_ds_mla / model1 suite rows with step columns. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/tune_compare"
cp benchmarks/results/tune_compare/compare.journal "$OUT/tune_compare/"
timeout ${COMPARE_LIMIT:-150} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel 8 \
  --max-spill 2048 > "$OUT/tune_compare.log" 2>&1
echo "== compare rc=$?"; grep "^|" "$OUT/tune_compare.log" | cut -d'|' -f2-4,7,12,15-17
timeout ${PAGING_LIMIT:-200} python3 benchmarks/bench_paging.py --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
echo "== paging rc=$?"; grep "touched" "$OUT/paging.log" | cut -c1-150
for f in fp8_ds_mla model1; do
  timeout ${BENCH_LIMIT:-90} python3 -m sparsemla.cli bench --formats $f --out "$OUT/bench_$f" 2>&1 \
    | grep -v Warn > "$OUT/bench_$f.log"
  echo "== bench $f rc=$?"
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
