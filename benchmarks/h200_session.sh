#!/usr/bin/env bash
# Session 24, call 7 (issue 7): correctness of the final tree's Gluon cases in three formats (gpu_correctness.py:
# the wide kernel's 4-split cases at 16-32 heads and the narrow ones take the combine's PARTS_FIRST; T=6, so the
# persistent kernel, whose own cases were call 3's, does not run here).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/gpu_correctness.py auto576 fp8_576 ds_mla gluon > "$OUT/gpu_correctness_gluon.log" 2>&1
echo "== gpu_correctness gluon rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_gluon.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_gluon.log" | head -5; tail -1 "$OUT/gpu_correctness_gluon.log"
pack_out
