#!/usr/bin/env bash
# Session 35: are the split-K partials' store instructions or their bytes what costs the narrow Gluon kernel ~1 us at
# T=1? head_fast.py times the shipped kernels against copies whose narrow kernel stores the same float32 partials
# with the heads fastest (8-byte stores, half the instructions) and against half_parts.py's half writes (timing only;
# at most 330 s).
#   bash benchmarks/calls/h200_call_s35a.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 330 python3 benchmarks/calls/head_fast.py ${1:+--rows "$1"} > "$OUT/head_fast.log" 2>&1
echo "== head_fast rc=$?"; grep "^|\|Error" "$OUT/head_fast.log" | tail -11
pack_out
