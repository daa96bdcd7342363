#!/usr/bin/env bash
# Session-4 device call: finish the tuning run (model1 H >= 64, resuming from
# benchmarks/results/tune_run2/'s journal) and grid vs TPE (resuming from
# benchmarks/results/tune_compare/compare.journal). Everything under $OUT is packed into one
# archive at the end (the device tool returns only a few files per call).
#   bash benchmarks/calls/h200_call_tune.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
# First the direct launcher on the GPU (graph replays against the reference, dispatch overhead).
timeout 90 python3 benchmarks/check_flashinfer.py --overhead-only 2>&1 | grep -v Warn | tee "$OUT/overhead.log" | tail -n 14
mkdir -p "$OUT/tune_compare"
cp benchmarks/results/tune_compare/compare.journal "$OUT/tune_compare/" 2>/dev/null
FORMATS=model1 TRIALS=8 PARALLEL=8 LIMIT=${TUNE_LIMIT:-160} bash benchmarks/h200_tune.sh
echo "== tune_compare (limit ${COMPARE_LIMIT:-210}s)"
timeout ${COMPARE_LIMIT:-210} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel 8 \
  --max-spill 2048 > "$OUT/tune_compare.log" 2>&1
echo "== rc=$?"
grep -v Warn "$OUT/tune_compare.log" | grep -v "^\[" | tail -n 12
tail -n 3 "$OUT/tune_compare.log" | cut -c1-200
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
