#!/usr/bin/env bash
# Session 16's fourth device call on the H200, for issue 7: the narrow kernel's correctness at 128 heads
# (eight 16-head programs, the new T=1 entries) beside its other narrow cases for the bf16 caches; the
# dispatch's stand-in entries (sink + LSE, another page size, 8 heads) against the default config.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 120 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 narrow > "$OUT/gpu_correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep -i "fail\|error\|Trace" "$OUT/gpu_correctness.log" | head
timeout 250 python3 benchmarks/calls/stand_in_check.py > "$OUT/stand_in_check.log" 2>&1
echo "== stand_in_check rc=$?"; grep "^| " "$OUT/stand_in_check.log" | sort -u | cut -c1-260
pack_out
