#!/usr/bin/env bash
# Prepared in session 41. Any sm90 card: proto_fp8_raw.py, the narrow fp8_e4m3 kernel gathering the raw rows by
# cp.async into two stages, both products on e4m3 operands, V^T transposed in place: a unit check of the transpose,
# the kernel against the PyTorch reference, then timed beside the shipped kernel on the suite's slot pool and on an
# L2-resident one (T=256 H=16), for the suite's fp8 (d_qk 576) and fp8_nope (512) formats.
#   bash benchmarks/calls/h200_call_s41b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
for fmt in fp8 fp8_nope; do
  timeout 240 python3 benchmarks/calls/proto_fp8_raw.py --format $fmt > "$OUT/proto_fp8_raw_$fmt.log" 2>&1
  echo "== proto_fp8_raw $fmt T=256 rc=$?"; grep "unit\|debug\|trial\|^|\|correct\|Error\|error" \
    "$OUT/proto_fp8_raw_$fmt.log" | tail -24
done
# the DEBUG build (fp8): tile 0's V^T and scores as M sees them, against PyTorch
timeout 100 python3 benchmarks/calls/proto_fp8_raw.py --debug-only > "$OUT/proto_fp8_raw_debug.log" 2>&1
echo "== proto_fp8_raw --debug-only rc=$?"; grep "debug\|Error" "$OUT/proto_fp8_raw_debug.log" | tail -4
