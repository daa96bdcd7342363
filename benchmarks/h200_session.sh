#!/usr/bin/env bash
# Session 21, call 3 (call 2, the A/B of FUSED, is at 5b2babb): with runtime/triton_backend._fused taking the
# in-kernel combine for 64-head programs with 2 splits only (call 2: 1.01-1.04x there, slower elsewhere), the
# Gluon cases of gpu_correctness.py that run it (sinks, LSE, -1 rows, topk_length), one A/B row checked again
# after its CUDA-graph replays, and the suite rows whose tuned config takes it beside FlashInfer (T=32 H=128,
# T=64 H=64, fp8 NoPE T=64 H=32).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 120 python3 benchmarks/gpu_correctness.py gluon fused > "$OUT/gpu_correctness_fused.log" 2>&1
echo "== gpu_correctness fused rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_fused.log"; grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_fused.log" | head -5; tail -1 "$OUT/gpu_correctness_fused.log"
timeout 90 python3 benchmarks/calls/fused_combine.py --formats bf16,fp8_ds_mla --heads 128 --tokens 32 > "$OUT/fused_combine.log" 2>&1
echo "== fused_combine rc=$?"; sed -n '/^| format/,$p' "$OUT/fused_combine.log"; grep -i "error\|Traceback" "$OUT/fused_combine.log" | head -5
bench_within 330 "" "bf16,bf16_nope,fp8,fp8_ds_mla,model1 128 32" "bf16,bf16_nope,fp8,fp8_nope,fp8_ds_mla,model1 64 64" "fp8_nope 32 64"
pack_out
