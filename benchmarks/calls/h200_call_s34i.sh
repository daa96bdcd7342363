#!/usr/bin/env bash
# Session 34: the PARTS_F16 combine with its partials put back in column order before the merge (contiguous output
# stores): combine16_time.py, then parts16.py on two rows (at most 150 s).
#   bash benchmarks/calls/h200_call_s34i.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 45 python3 benchmarks/calls/combine16_time.py > "$OUT/combine16_time.log" 2>&1
echo "== combine16_time rc=$?"; grep "^|\|Error" "$OUT/combine16_time.log"
timeout 100 python3 benchmarks/calls/parts16.py --reps 2 --rows bf16:1:128,bf16:64:16 > "$OUT/parts16.log" 2>&1
echo "== parts16 rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts16.log" | tail -4
pack_out
