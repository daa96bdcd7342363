#!/usr/bin/env bash
# Session 32: issue 4's paging kernels tuned on the GPU (sparsemla tune-paging: an Optuna study per kernel path and
# bucket, each trial checked byte for byte against the reference), then the paging benchmark with the tuned table
# (read from the user dir), so page_split's rows show what the table selects. The journal and the table come back in
# $OUT; a journal at benchmarks/calls/paging.journal (a cut-off call's, copied there) is resumed.
#   bash benchmarks/calls/h200_call_s32a.sh [TUNE_S] [BENCH_S]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
tune_s=${1:-300} bench_s=${2:-240}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
mkdir -p "$OUT/tuned"
[ -f benchmarks/calls/paging.journal ] && cp benchmarks/calls/paging.journal "$OUT/paging.journal"
start=$(date +%s)
timeout "$tune_s" sparsemla tune-paging --out "$OUT/tuned" --storage "$OUT/paging.journal" --trials 24 \
  > "$OUT/tune_paging.log" 2>&1
echo "== tune-paging rc=$? in $(( $(date +%s) - start )) s"
grep -v "^\[.*\] #" "$OUT/tune_paging.log" | tail -40 | cut -c1-220
export SPARSEMLA_TUNED_DIR="$OUT/tuned"
paging "$bench_s"
pack_out
