#!/usr/bin/env bash
# Session 34, call 5 (at ab597e6; the field is removed): GluonKernel.first_alone (the narrow bf16 gather requests
# tile 1 once tile 0 has landed) on the rows whose entries run the narrow bf16 kernel with two stages:
# gpu_correctness.py's Gluon cases of both bf16 formats with the field on, first_alone.py (timed in alternating
# orders), then gluon_timeline.py's T=1 phases with it (at most 540 s in all).
#   bash benchmarks/calls/h200_call_s34d.sh [ROWS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 190 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 gluon --with first_alone=True \
  > "$OUT/correctness_fa.log" 2>&1
echo "== gpu_correctness first_alone rc=$?"; grep -c " ok$" "$OUT/correctness_fa.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_fa.log" | head
timeout 260 python3 benchmarks/calls/first_alone.py ${1:+--rows "$1"} > "$OUT/first_alone.log" 2>&1
echo "== first_alone rc=$?"; grep "^|\|Error\|FAILED" "$OUT/first_alone.log" | tail -11
timeout 80 python3 benchmarks/calls/gluon_timeline.py --rows bf16:128:1 --with first_alone=True \
  > "$OUT/timeline_fa.log" 2>&1
echo "== gluon_timeline first_alone rc=$?"; grep "program \|tile 0 ready\|loader: tile 0 in" "$OUT/timeline_fa.log"
pack_out
