#!/usr/bin/env bash
# Session 30, eighth call (an H100): the final tree's defaults on the GPU after the removals (s_ahead, three stages,
# PagingConfig.pdl) and the new defaults (the tail split, the wait): gpu_correctness.py's Gluon and tail cases,
# pdl_wait.py's hazard chains, and the paging benchmark (its correctness checks first, then the table).
#   bash benchmarks/calls/h200_call_s30g.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 150 python3 benchmarks/gpu_correctness.py gluon auto576 > "$OUT/gpu_correctness_gluon.log" 2>&1
echo "== gpu_correctness gluon rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_gluon.log"; tail -1 "$OUT/gpu_correctness_gluon.log"
timeout 90 python3 benchmarks/gpu_correctness.py tail auto576 > "$OUT/gpu_correctness_tail.log" 2>&1
echo "== gpu_correctness tail rc=$?"; tail -1 "$OUT/gpu_correctness_tail.log"
timeout 90 python3 benchmarks/calls/pdl_wait.py --no-time > "$OUT/pdl_wait_hazards.log" 2>&1
echo "== pdl_wait hazards rc=$?"; tail -2 "$OUT/pdl_wait_hazards.log"
paging 200
pack_out
