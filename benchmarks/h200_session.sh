#!/usr/bin/env bash
# Session 24, call 8 (issue 7): the wide Gluon kernel's group A writing its output through a stage
# (GluonKernel.staged_out, off in the runtime): correctness against the float64 reference, then ABBA against the
# shipped kernel on the wide rows without split-K (benchmarks/calls/staged_out.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/staged_out.py > "$OUT/staged_out.log" 2>&1
echo "== staged_out rc=$?"; grep "staged rel\|correctness:\|Error\|error:" "$OUT/staged_out.log" | head -12
sed -n '/^| format/,$p' "$OUT/staged_out.log"
pack_out
