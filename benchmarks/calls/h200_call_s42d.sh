#!/usr/bin/env bash
# Prepared in session 42. Any sm90 card: GluonKernel.raw, the raw-row fp8_e4m3 kernel in the runtime (the rule:
# 16 heads a program, one split). gpu_correctness.py's narrow Gluon cases for the fp8_e4m3 formats (the one-split ones
# now run raw: 16, 24, 32 and 128 heads, one and two loading groups' configs, a paged cache, sinks +/-inf, LSE,
# topk_length, NaN in every slot not reached), then raw_rows.py: raw against the dequantizing kernel, same config, in
# one process (T=128 and 256 with 16 heads, T=256 with 32; the suite's slot pool and an L2-resident one).
#   bash benchmarks/calls/h200_call_s42d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 300 python3 benchmarks/gpu_correctness.py fp8_576 fp8_nope512 narrow > "$OUT/gpu_correctness_raw.log" 2>&1
echo "== gpu_correctness fp8 narrow rc=$?"; grep -c " ok" "$OUT/gpu_correctness_raw.log"; grep -i "fail\|error" \
  "$OUT/gpu_correctness_raw.log" | head -20
timeout 250 python3 benchmarks/calls/raw_rows.py > "$OUT/raw_rows.log" 2>&1
echo "== raw_rows rc=$?"; grep "^|\|correct\|Error\|error" "$OUT/raw_rows.log" | tail -20
