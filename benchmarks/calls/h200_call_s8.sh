#!/usr/bin/env bash
# Session 8, first call: grid vs TPE again (issue 5) with four TPE sampler seeds per spec on the
# grids measured under template fe6b3189 (same PTX for their configs, benchmarks/ptx_same.py),
# then the paging benchmark with the mark-spacing variants (issue 4). $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
mkdir -p "$OUT/tune_compare"
cp benchmarks/results/tune_compare/compare.journal "$OUT/tune_compare/"
timeout ${COMPARE_LIMIT:-330} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel 12 \
  --max-spill 2048 --carry-grid-from fe6b3189 --tpe-seeds ${TPE_SEEDS:-0,1,2,3} > "$OUT/tune_compare.log" 2>&1
echo "== compare rc=$?"
grep -v Warn "$OUT/tune_compare.log" | grep -v "^\[" | tail -n 16 | cut -c1-250
if [ "${PAGING:-1}" != 0 ]; then
  paging ${PAGING_LIMIT:-170}
fi
pack_out
