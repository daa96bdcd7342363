#!/usr/bin/env bash
# Session 34, call 2 (at 1853e97; the switch it measures is removed): float16 split-K partials (an upper bound on
# halving their bytes: parts_fp16.py, no scaling) against float32 on the split rows, in alternating orders (at most
# 300 s).
#   bash benchmarks/calls/h200_call_s34a.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 300 python3 benchmarks/calls/parts_fp16.py ${1:+--rows "$1"} > "$OUT/parts_fp16.log" 2>&1
echo "== parts_fp16 rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts_fp16.log" | tail -14
pack_out
