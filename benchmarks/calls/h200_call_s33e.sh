#!/usr/bin/env bash
# Session 33, run in session 34 call 1 at f42dc42: GluonKernel.ids_early (tile 0's slot ids loaded before topk_len;
# 0.997-1.016x, removed) on the bf16 rows, with and without a
# topk_length argument: ids_early.py (each variant checked with random lengths, then timed in alternating orders).
# With `full`, gpu_correctness.py's Gluon cases of both bf16 formats with the field on go first, and
# gluon_timeline.py's T=1 phases with it follow (at most 540 s in all).
#   bash benchmarks/calls/h200_call_s33e.sh [ROWS] [full]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
if [ "${2:-}" = full ]; then
  timeout 190 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 gluon --with ids_early=True \
    > "$OUT/correctness_ie.log" 2>&1
  echo "== gpu_correctness ids_early rc=$?"; grep -c " ok$" "$OUT/correctness_ie.log"
  grep "FAIL\|Error\|all ok" "$OUT/correctness_ie.log" | head
fi
timeout 260 python3 benchmarks/calls/ids_early.py ${1:+--rows "$1"} > "$OUT/ids_early.log" 2>&1
echo "== ids_early rc=$?"; grep "^|\|Error\|FAILED" "$OUT/ids_early.log" | tail -20
if [ "${2:-}" = full ]; then  # where the first tile now arrives (session 33's call 2 has the shipped kernel's)
  timeout 90 python3 benchmarks/calls/gluon_timeline.py --rows bf16:128:1,bf16:64:1 --with ids_early=True \
    > "$OUT/timeline_ie.log" 2>&1
  echo "== gluon_timeline ids_early rc=$?"; grep "program \|tile 0 ready\|loader: tile 0 in" "$OUT/timeline_ie.log"
fi
pack_out
