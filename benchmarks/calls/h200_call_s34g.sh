#!/usr/bin/env bash
# Session 34, call 8 (at 588dd64; GluonKernel.parts_f16 and the combine's PARTS_F16 are removed since session 35)
# Session 34: parts_f16 with one cvt a pair (F2FP; call 7's build converted each value alone, an F2F each): a quick
# correctness pass (bf16 and model1 narrow cases), then parts16.py --no-max on six rows (at most 380 s).
#   bash benchmarks/calls/h200_call_s34g.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 80 python3 benchmarks/gpu_correctness.py auto576 model1 narrow > "$OUT/correctness_narrow.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/correctness_narrow.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_narrow.log" | head
rows=${1:-bf16:1:128,bf16:1:64,bf16:4:16,bf16:64:16,fp8:1:128,fp8:1:16}
timeout 240 python3 benchmarks/calls/parts16.py --no-max --rows "$rows" \
  > "$OUT/parts16.log" 2>&1
echo "== parts16 rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts16.log" | tail -17
pack_out
