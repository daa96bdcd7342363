#!/usr/bin/env bash
# Session 33: the narrow bf16 kernel with two computing warp groups (Config num_warps=12, GluonKernel.m_groups=2):
# its correctness on the GPU (gpu_correctness.py m2: sinks of +/-inf, LSE, masked heads, topk_length, empty
# splits), then timed against the H200 table's entries (m_groups.py: rotating orders, one process), T=1 first.
# (Ran at 5de07e2, on an H100; m_groups was removed after it: benchmarks/results/session33/README.md.)
#   bash benchmarks/calls/h200_call_s33a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 150 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 m2 > "$OUT/correctness_m2.log" 2>&1
echo "== gpu_correctness m2 rc=$?"; grep -c " ok$" "$OUT/correctness_m2.log"; grep "FAIL\|Error\|all ok" "$OUT/correctness_m2.log" | head -20
timeout 330 python3 benchmarks/calls/m_groups.py \
  bf16:1:128:h16.s16.w12.st2+h16.s8.w12.st2+h16.s32.w12.st2 bf16_nope:1:128:h16.s16.w12.st2+h16.s8.w12.st2 \
  bf16:1:64:h16.s16.w12.st2+h16.s8.w12.st2 bf16:4:16 bf16:4:32 bf16:16:16 bf16:64:16 bf16:128:16 bf16:256:16 \
  bf16_nope:256:16 > "$OUT/m_groups.log" 2>&1
echo "== m_groups rc=$?"; grep "^|\|Error\|FAILED" "$OUT/m_groups.log" | tail -30
pack_out
