#!/usr/bin/env bash
# Session 36, the last device minutes (an H100 held): gpu_correctness.py's persistent, tail and fused groups with the
# runtime's defaults (the Gluon launches that bfloat16 partials must leave alone: one split, or the in-kernel merge).
#   bash benchmarks/calls/h200_call_s36g.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
for group in fused tail persistent; do
  timeout 70 python3 benchmarks/gpu_correctness.py $group > "$OUT/correctness_$group.log" 2>&1
  echo "== gpu_correctness $group rc=$?"; grep -c " ok$" "$OUT/correctness_$group.log"
  grep "FAIL\|Error\|all ok" "$OUT/correctness_$group.log" | head -5
done
pack_out
