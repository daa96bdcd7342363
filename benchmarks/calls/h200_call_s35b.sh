#!/usr/bin/env bash
# Session 35: the narrow Gluon kernel's bfloat16 split-K partials (GluonKernel.parts_bf16 with the combine's
# PARTS_BF16; off by default until measured): gpu_correctness.py's narrow and many-empty-splits cases of every format
# with SPARSEMLA_PARTS_BF16=1, then parts_bf16.py (float32 against bfloat16 on the split rows, errors and times; at
# most 520 s).
#   bash benchmarks/calls/h200_call_s35b.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
SPARSEMLA_PARTS_BF16=1 timeout 120 python3 benchmarks/gpu_correctness.py narrow > "$OUT/correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow (parts_bf16) rc=$?"; grep -c " ok$" "$OUT/correctness_narrow.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_narrow.log" | head
SPARSEMLA_PARTS_BF16=1 timeout 60 python3 benchmarks/gpu_correctness.py empty > "$OUT/correctness_empty.log" 2>&1
echo "== gpu_correctness empty (parts_bf16) rc=$?"; grep -c " ok$" "$OUT/correctness_empty.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_empty.log" | head
timeout 300 python3 benchmarks/calls/parts_bf16.py ${1:+--rows "$1"} > "$OUT/parts_bf16.log" 2>&1
echo "== parts_bf16 rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts_bf16.log" | tail -16
grep -o "rel err: {[^}]*}" "$OUT/parts_bf16.log" | head -13
pack_out
