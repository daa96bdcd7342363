#!/usr/bin/env bash
# Session 20, call 4 (about 3 minutes): the combine kernel as a programmatic dependent of one-wave Gluon grids
# (benchmarks/calls/pdl_one_wave.py: every T = 1, 4, 16 suite row the rule applies to, checked and timed with
# and without PDL).
#   bash benchmarks/h200_session8.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 480 python3 benchmarks/calls/pdl_one_wave.py > "$OUT/pdl_one_wave.log" 2>&1
echo "== pdl_one_wave rc=$?"; grep "^|" "$OUT/pdl_one_wave.log" | sort -u | head -70
pack_out
