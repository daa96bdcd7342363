#!/usr/bin/env bash
# Session 22's call 7 as it ran (benchmarks/results/session22/README.md); no new call is prepared: the next
# session writes its own. benchmarks/calls/st1_pdl.py: T=1 H=128 with one-stage 16-head programs (room on every
# SM for the combine's programs) and the PDL combine, against the shipped entries, in every format.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/st1_pdl.py > "$OUT/st1_pdl.log" 2>&1
echo "== st1_pdl rc=$?"; sed -n '/^| format/,$p' "$OUT/st1_pdl.log"; grep -i "error\|Traceback" "$OUT/st1_pdl.log" | head -5
pack_out
