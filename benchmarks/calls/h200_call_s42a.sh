#!/usr/bin/env bash
# Prepared in session 42 (run as its calls 2-5, 7 and 9, on H100s). Any sm90 card: proto_fp8_rega.py, the raw-row
# e4m3 kernel with V^T made in registers as P.V's A operand: unit checks of that operand, the kernels (its KERNELS)
# against the PyTorch reference, then timed beside its diagnostics, proto_fp8_raw.py's kernel (V^T in place) and the
# shipped one on the suite's slot pool and an L2-resident one (T=256 H=16), fp8 and fp8_nope.
#   bash benchmarks/calls/h200_call_s42a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
for fmt in fp8 fp8_nope; do
  timeout 240 python3 benchmarks/calls/proto_fp8_rega.py --format $fmt > "$OUT/proto_fp8_rega_$fmt.log" 2>&1
  echo "== proto_fp8_rega $fmt T=256 rc=$?"; grep "unit\|trial\|features\|^|\|correct\|Error\|error" \
    "$OUT/proto_fp8_rega_$fmt.log" | tail -30
done
