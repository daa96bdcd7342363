#!/usr/bin/env bash
# Session 35, call 1 (at 0817c6a; GluonKernel.parts_f16 and the combine's PARTS_F16 are removed since session 35)
# Session 34, prepared for the next device time: the float16 partials (GluonKernel.parts_f16 with the combine's
# PARTS_F16; off by default) as built at the end of session 34 (per-warp scales; the merge puts the columns back in
# order before the sum; not yet measured). The combine alone on float32 and float16 partials (combine16_time.py),
# the narrow and many-empty-splits correctness cases of every format with SPARSEMLA_PARTS_F16=1, then parts16.py
# (float32 and float16) on the split rows, and the T=1 timeline with it (at most 560 s).
#   bash benchmarks/calls/h200_call_s34j.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 45 python3 benchmarks/calls/combine16_time.py > "$OUT/combine16_time.log" 2>&1
echo "== combine16_time rc=$?"; grep "^|\|Error" "$OUT/combine16_time.log"
SPARSEMLA_PARTS_F16=1 timeout 130 python3 benchmarks/gpu_correctness.py narrow > "$OUT/correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow (parts_f16) rc=$?"; grep -c " ok$" "$OUT/correctness_narrow.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_narrow.log" | head
SPARSEMLA_PARTS_F16=1 timeout 70 python3 benchmarks/gpu_correctness.py empty > "$OUT/correctness_empty.log" 2>&1
echo "== gpu_correctness empty (parts_f16) rc=$?"; grep -c " ok$" "$OUT/correctness_empty.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_empty.log" | head
timeout 260 python3 benchmarks/calls/parts16.py ${1:+--rows "$1"} > "$OUT/parts16.log" 2>&1
echo "== parts16 rc=$?"; grep "^|\|Error\|FAILED" "$OUT/parts16.log" | tail -16
# where a T=1 program's time goes with it (session 33's call 2 and session 34's call 1 have it without)
SPARSEMLA_PARTS_F16=1 timeout 40 python3 benchmarks/calls/gluon_timeline.py --rows bf16:128:1 > "$OUT/timeline_p16.log" 2>&1
echo "== gluon_timeline (parts_f16) rc=$?"; grep "program \|tile 0 ready\|output written" "$OUT/timeline_p16.log"
pack_out
