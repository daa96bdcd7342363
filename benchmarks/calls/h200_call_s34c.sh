#!/usr/bin/env bash
# Session 34 (call 4): the narrow fp8 prototype with S^T computed by the dequantizing warp group from its registers
# (proto_c_scores.py --diag): correctness, then timed beside the shipped kernel at T=256 and T=128 H=16, and
# without C's S^T wgmmas or M's P.V (wrong outputs, timing only; at most 400 s).
#   bash benchmarks/calls/h200_call_s34c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
for T in 256 128; do
  timeout 200 python3 benchmarks/calls/proto_c_scores.py --diag --tokens $T > "$OUT/proto_c_scores_t$T.log" 2>&1
  echo "== proto_c_scores T=$T rc=$?"; grep "^|\|FAIL\|Error\|correctness" "$OUT/proto_c_scores_t$T.log" | tail -12
done
pack_out
