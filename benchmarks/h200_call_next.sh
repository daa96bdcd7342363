#!/usr/bin/env bash
# Next device call (prepared in session 5): grid vs TPE's confirmation step (both studies of
# each spec are complete in the journal: only the winners are re-measured), the paging
# benchmark with the mark check and the spread copy (and the copy grid sweep), and a re-tune of
# fp8 T=16 H=64 (1.02x FlashInfer, never re-tuned with the split seeds). About 9 minutes.
# $OUT is packed into one archive. Afterwards: benchmarks/h200_call_next2.sh.
set -u
export PYTHONUNBUFFERED=1
COMPARE_LIMIT=${COMPARE_LIMIT:-200} bash benchmarks/h200_compare.sh
timeout ${PAGING_LIMIT:-200} python3 benchmarks/bench_paging.py --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
echo "== paging rc=$?"; grep "touched" "$OUT/paging.log" | cut -c1-150
FORMATS=fp8 TRIALS=16 PARALLEL=8 LIMIT=70 TUNE_ARGS="--heads 64 --tokens 16" bash benchmarks/h200_tune.sh
SPARSEMLA_TUNED_DIR="$OUT/tuned" timeout 45 python3 -m sparsemla.cli bench --no-prefill --formats fp8 --tokens 16 \
  --heads 64 --out "$OUT/bench_fp8_t16h64" 2>&1 | grep -v Warn | tail -n 3
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
