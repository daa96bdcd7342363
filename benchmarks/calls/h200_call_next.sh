#!/usr/bin/env bash
# Grid vs TPE's confirmation step (both studies of each spec are complete in the journal: only
# the winners are re-measured) and the paging benchmark with every page_split variant (session 6
# added claim_copy, the one-kernel claim-and-copy, not measured yet) and the copy grid sweep.
# About 7 minutes. $OUT is packed into one archive. Set COMPARE_LIMIT=0 to run the paging part alone.
set -u
export PYTHONUNBUFFERED=1
[ "${COMPARE_LIMIT:-200}" != 0 ] && COMPARE_LIMIT=${COMPARE_LIMIT:-200} bash benchmarks/h200_compare.sh
timeout ${PAGING_LIMIT:-200} python3 benchmarks/bench_paging.py --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
echo "== paging rc=$?"; grep "touched" "$OUT/paging.log" | cut -c1-150
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
