#!/usr/bin/env bash
# Session 35: gpu_correctness.py's narrow and many-empty-splits cases of every format with the runtime's defaults
# (bfloat16 split-K partials since session 35; call 3 ran out of its time limits after 96 and 36 cases): at most
# 430 s.
#   bash benchmarks/calls/h200_call_s35d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 290 python3 benchmarks/gpu_correctness.py narrow > "$OUT/correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow rc=$?"; grep -c " ok$" "$OUT/correctness_narrow.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_narrow.log" | head
timeout 130 python3 benchmarks/gpu_correctness.py empty > "$OUT/correctness_empty.log" 2>&1
echo "== gpu_correctness empty rc=$?"; grep -c " ok$" "$OUT/correctness_empty.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_empty.log" | head
pack_out
