#!/usr/bin/env bash
# Session 21, call 2 (session 20's prepared call, run as call 1, is at e7c3d46): the split-K combine in the
# Gluon kernel (the template's FUSED; runtime/triton_backend._fused). A/B of FUSED against the combine kernel
# in the suite's split rows (benchmarks/calls/fused_combine.py, each row checked against the reference with
# FUSED), the Gluon cases of gpu_correctness.py (split 4 now runs FUSED: sinks, LSE, -1 rows, topk_length),
# and the T=16/32 H=128 bf16 rows beside FlashInfer with the runtime's rule.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/fused_combine.py --formats bf16,fp8,fp8_ds_mla,model1 --tokens 32,16,64,4 \
  --budget 240 > "$OUT/fused_combine.log" 2>&1
echo "== fused_combine rc=$?"; sed -n '/^| format/,$p' "$OUT/fused_combine.log"; grep -i "error\|Traceback\|budget" "$OUT/fused_combine.log" | head -5
timeout 170 python3 benchmarks/gpu_correctness.py gluon > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error\|error:" "$OUT/gpu_correctness.log" | head -5; tail -1 "$OUT/gpu_correctness.log"
bench_within 60 "" "bf16 128 16,32"
pack_out
