#!/usr/bin/env bash
# Session 34, call 9 (at da94732; GluonKernel.parts_f16 and the combine's PARTS_F16 are removed since session 35)
# Session 34: the combine kernel alone on float32 and on float16 (PARTS_F16) partials (combine16_time.py; at most
# 100 s).
#   bash benchmarks/calls/h200_call_s34h.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 100 python3 benchmarks/calls/combine16_time.py > "$OUT/combine16_time.log" 2>&1
echo "== combine16_time rc=$?"; grep "^|\|Error" "$OUT/combine16_time.log"
pack_out
