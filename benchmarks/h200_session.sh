#!/usr/bin/env bash
# Prepared at the end of session 23, not yet run (session 23's last call, 6, is at 9bf98e7): the combine kernel's
# PARTS_FIRST (runtime/triton_backend._COMBINE_PARTS_FIRST, off) against the shipped combine on every T=1 and T=4
# split row, then T=16 (benchmarks/calls/combine_parts_first.py). If it wins, turn it on, re-bench those rows
# beside FlashInfer and merge them (benchmarks/merge_bench.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 360 python3 benchmarks/calls/combine_parts_first.py --tokens 1,4 > "$OUT/combine_parts_first.log" 2>&1
echo "== combine_parts_first T=1,4 rc=$?"; sed -n '/^| format/,$p' "$OUT/combine_parts_first.log"
grep -i "error\|Traceback" "$OUT/combine_parts_first.log" | head -5
timeout 150 python3 benchmarks/calls/combine_parts_first.py --tokens 16 --formats bf16,fp8,model1 \
  > "$OUT/combine_parts_first_t16.log" 2>&1
echo "== combine_parts_first T=16 rc=$?"; sed -n '/^| format/,$p' "$OUT/combine_parts_first_t16.log"
pack_out
