#!/usr/bin/env bash
# Session 23, call 2 (issue 7): shared memory reserved per combine program, with and without PDL, on the
# small-T split rows (benchmarks/calls/combine_place.py). The runtime reserves nothing; the call forces pairs.
# (Call 1, at 8d773fc, capped the combine programs per SM by warps instead: benchmarks/calls/combine_warps.py.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/combine_place.py --tokens 1 --heads 128,64 > "$OUT/combine_place_t1.log" 2>&1
echo "== combine_place T=1 rc=$?"; grep "^| \|as launched" "$OUT/combine_place_t1.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_place_t1.log" | head -5
timeout 200 python3 benchmarks/calls/combine_place.py --tokens 4 --heads 128,32 > "$OUT/combine_place_t4.log" 2>&1
echo "== combine_place T=4 rc=$?"; grep "^| " "$OUT/combine_place_t4.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_place_t4.log" | head -5
timeout 120 python3 benchmarks/calls/combine_place.py --tokens 16 --heads 128,64 --formats bf16,fp8,model1 > "$OUT/combine_place_t16.log" 2>&1
echo "== combine_place T=16 rc=$?"; grep "^| " "$OUT/combine_place_t16.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_place_t16.log" | head -5
pack_out
