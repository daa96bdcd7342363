#!/usr/bin/env bash
# Grid vs TPE on the device (benchmarks/tune_compare.py), resuming
# benchmarks/results/tune_compare/compare.journal; results and log under $OUT/tune_compare.
#   COMPARE_LIMIT=200 PARALLEL=8 bash benchmarks/h200_compare.sh
# (after: source .whl/prelude.sh && python3 -m pip install .).
set -u
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/tune_compare"
cp benchmarks/results/tune_compare/compare.journal "$OUT/tune_compare/"
timeout ${COMPARE_LIMIT:-200} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel ${PARALLEL:-8} \
  --max-spill 2048 > "$OUT/tune_compare.log" 2>&1
echo "== compare rc=$?"
grep -v Warn "$OUT/tune_compare.log" | grep -v "^\[" | tail -n 12
grep "^\[" "$OUT/tune_compare.log" | tail -n 3 | cut -c1-200
