#!/usr/bin/env bash
# Session 6's one device call (the device was scarce): grid vs TPE's confirmation, the paging
# benchmark (benchmarks/calls/h200_call_next.sh, shorter limits), then the p_exchange re-tune of the
# H >= 64 rows (benchmarks/calls/h200_call_px.sh) for the rest of the call's ~560 s.
set -u
export PYTHONUNBUFFERED=1
start=$(date +%s)
COMPARE_LIMIT=${COMPARE_LIMIT:-130} bash benchmarks/h200_compare.sh
timeout ${PAGING_LIMIT:-140} python3 benchmarks/bench_paging.py --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
echo "== paging rc=$?"; grep "touched" "$OUT/paging.log" | grep -v "^  " | cut -c1-150
left=$(( ${END:-540} - ($(date +%s) - start) ))
echo "== $left s left for the re-tune"
PARALLEL=8 bash benchmarks/h200_tune.sh ${FORMATS:-fp8,fp8_ds_mla,model1,bf16} ${TRIALS:-6} $left "--heads 64,128"
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
