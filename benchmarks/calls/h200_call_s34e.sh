#!/usr/bin/env bash
# Session 34: what halving the split-K partials' sectors would buy (half_parts.py: the narrow Gluon kernels write,
# and the combine reads, only the partials' first 256 columns; wrong outputs, timing only; at most 300 s).
#   bash benchmarks/calls/h200_call_s34e.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 300 python3 benchmarks/calls/half_parts.py ${1:+--rows "$1"} > "$OUT/half_parts.log" 2>&1
echo "== half_parts rc=$?"; grep "^|\|Error" "$OUT/half_parts.log" | tail -11
pack_out
