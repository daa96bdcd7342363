#!/usr/bin/env bash
# Session-5 device call: grid vs TPE (benchmarks/tune_compare.py), resuming
# benchmarks/results/tune_compare/compare.journal (its first two specs are done). $OUT is
# packed into one archive.
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/tune_compare"
cp benchmarks/results/tune_compare/compare.journal "$OUT/tune_compare/"
timeout ${COMPARE_LIMIT:-380} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel 12 \
  --max-spill 2048 > "$OUT/tune_compare.log" 2>&1
echo "== rc=$?"
grep -v Warn "$OUT/tune_compare.log" | grep -v "^\[" | tail -n 12
grep "^\[" "$OUT/tune_compare.log" | tail -n 3 | cut -c1-200
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
