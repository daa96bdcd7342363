#!/usr/bin/env bash
# Next device call (prepared in session 5): grid vs TPE's confirmation step (both studies of
# each spec are complete in the journal: only the winners are re-measured), the paging
# benchmark with the mark check and the spread copy (and the copy grid sweep). About 7 minutes.
# $OUT is packed into one archive. (fp8 T=16 H=64, 1.02x FlashInfer, is re-tuned by
# h200_call_px.sh with the other H >= 64 rows.)
set -u
export PYTHONUNBUFFERED=1
COMPARE_LIMIT=${COMPARE_LIMIT:-200} bash benchmarks/h200_compare.sh
timeout ${PAGING_LIMIT:-200} python3 benchmarks/bench_paging.py --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
echo "== paging rc=$?"; grep "touched" "$OUT/paging.log" | cut -c1-150
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
