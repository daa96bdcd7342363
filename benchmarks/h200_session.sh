#!/usr/bin/env bash
# Session 23, call 1 (issue 7): warps per combine program, with and without PDL, on the small-T split rows
# (benchmarks/calls/combine_warps.py). The runtime is unchanged (4 warps, its PDL rule); the call forces pairs.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/combine_warps.py --tokens 1 --heads 128,64 --pairs 0:4,1:4,1:16,1:32,0:32 \
  > "$OUT/combine_warps_t1.log" 2>&1
echo "== combine_warps T=1 rc=$?"; grep "^| " "$OUT/combine_warps_t1.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_warps_t1.log" | head -5
timeout 230 python3 benchmarks/calls/combine_warps.py --tokens 4 --heads 128,32 --pairs 0:4,1:4,1:32,0:32 \
  > "$OUT/combine_warps_t4.log" 2>&1
echo "== combine_warps T=4 rc=$?"; grep "^| " "$OUT/combine_warps_t4.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_warps_t4.log" | head -5
pack_out
