#!/usr/bin/env bash
# Prepared in session 40. Any sm90 card: proto_fp8_mma.py, the narrow fp8_e4m3 kernel with both products on e4m3
# operands (S^T against Q's two e4m3 halves, O^T against P's; V^T stored transposed by the loading group), checked
# against the PyTorch reference (after unit checks of its two products) and timed beside the shipped kernel at T=256
# H=16, with two timing diagnostics (no V^T stores; no P.V).
#   bash benchmarks/calls/h200_call_s40a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 240 python3 benchmarks/calls/proto_fp8_mma.py > "$OUT/proto_fp8_mma.log" 2>&1
echo "== proto_fp8_mma T=256 rc=$?"; grep -v "^\s" "$OUT/proto_fp8_mma.log" | grep "unit\|map\|trial\|^|\|correct\|Error\|error" | tail -48
