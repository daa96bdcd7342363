#!/usr/bin/env bash
# Prepared in session 35: the wide Gluon kernel's bfloat16 split-K partials (GluonKernel.parts_bf16 with 64-head
# programs, SPARSEMLA_PARTS_BF16_WIDE=1; built and compiled in session 35, never run): gpu_correctness.py's wide
# split-K and many-empty-splits cases with it, then parts_bf16.py --wide (float32 against bfloat16 on the wide
# split-K rows, errors and times; at most 560 s). A card other than the H200 still gives the A/B.
# Ran as session 36's call 1 (at a8d0582, an H100; benchmarks/results/session36/): 1.05-1.21x, now the default, and
# the flag is gone (SPARSEMLA_PARTS_BF16=0 turns both kernels' off).
#   bash benchmarks/calls/h200_call_s36b.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
SPARSEMLA_PARTS_BF16_WIDE=1 timeout 110 python3 benchmarks/gpu_correctness.py wide > "$OUT/correctness_wide.log" 2>&1
echo "== gpu_correctness wide (parts_bf16 wide) rc=$?"; grep -c " ok$" "$OUT/correctness_wide.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_wide.log" | head
SPARSEMLA_PARTS_BF16_WIDE=1 timeout 100 python3 benchmarks/gpu_correctness.py empty > "$OUT/correctness_empty.log" 2>&1
echo "== gpu_correctness empty (parts_bf16 wide) rc=$?"; grep -c " ok$" "$OUT/correctness_empty.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_empty.log" | head
timeout 320 python3 benchmarks/calls/parts_bf16.py --wide ${1:+--rows "$1"} > "$OUT/parts_bf16_wide.log" 2>&1
echo "== parts_bf16 --wide rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts_bf16_wide.log" | tail -15
grep -o "rel err: {[^}]*}" "$OUT/parts_bf16_wide.log" | head -12
pack_out
