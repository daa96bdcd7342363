#!/usr/bin/env bash
# Session 33: GluonKernel.half_ready on the narrow fp8 rows (issue 7's fp8 T=256 H=16 rows at 0.46-0.55 of the copy
# ceiling, target 0.7): its correctness (gpu_correctness.py's narrow cases of the fp8 formats, with the field on),
# then timed against the shipped kernel (half_ready.py, alternating orders). (Ran at 2adb0d8 on an H100; half_ready
# was removed after it: benchmarks/results/session33/README.md.)
#   bash benchmarks/calls/h200_call_s33c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 200 python3 benchmarks/gpu_correctness.py fp8_576 fp8_nope512 ds_mla model1_p64 narrow --with half_ready=True \
  > "$OUT/correctness_hr.log" 2>&1
echo "== gpu_correctness half_ready rc=$?"; grep -c " ok$" "$OUT/correctness_hr.log"; grep "FAIL\|Error\|all ok" "$OUT/correctness_hr.log" | head
timeout 300 python3 benchmarks/calls/half_ready.py > "$OUT/half_ready.log" 2>&1
echo "== half_ready rc=$?"; grep "^|\|Error\|FAILED" "$OUT/half_ready.log" | tail -20
pack_out
