#!/usr/bin/env bash
# Session 20, calls 6-7 (about 3 minutes): benchmarks/calls/pdl_one_wave.py again at T = 16, 32, 64 (every row whose
# shipped config is a split Gluon grid of one wave, with and without PDL), for the 128-program grids with 2-4 splits.
# Call 6 (21042b6) left PDL off in both modes (the runtime rule then excluded those grids); call 7 forces each mode.
#   bash benchmarks/h200_session10.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 480 python3 benchmarks/calls/pdl_one_wave.py --tokens 16,32,64 > "$OUT/pdl_one_wave.log" 2>&1
echo "== pdl_one_wave rc=$?"; grep "^|" "$OUT/pdl_one_wave.log" | grep -v "runs:" | sort -u | head -70
pack_out
