#!/usr/bin/env bash
# Session 34, call 7 (at 8ff469a; GluonKernel.parts_f16 and the combine's PARTS_F16 are removed since session 35)
# Session 34: the narrow Gluon kernel's float16 partials (GluonKernel.parts_f16, on by the runtime's rule):
# gpu_correctness.py's narrow and many-empty-splits cases of every format with it, parts16.py (against float32,
# alternating orders), then gluon_timeline.py's T=1 phases (at most 560 s in all).
#   bash benchmarks/calls/h200_call_s34f.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 170 python3 benchmarks/gpu_correctness.py narrow > "$OUT/correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow rc=$?"; grep -c " ok$" "$OUT/correctness_narrow.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_narrow.log" | head
timeout 80 python3 benchmarks/gpu_correctness.py empty > "$OUT/correctness_empty.log" 2>&1
echo "== gpu_correctness empty rc=$?"; grep -c " ok$" "$OUT/correctness_empty.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_empty.log" | head
timeout 240 python3 benchmarks/calls/parts16.py ${1:+--rows "$1"} > "$OUT/parts16.log" 2>&1
echo "== parts16 rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts16.log" | tail -15
timeout 60 python3 benchmarks/calls/gluon_timeline.py --rows bf16:128:1 > "$OUT/timeline_p16.log" 2>&1
echo "== gluon_timeline rc=$?"; grep "program \|tile 0 ready\|output written" "$OUT/timeline_p16.log"
pack_out
