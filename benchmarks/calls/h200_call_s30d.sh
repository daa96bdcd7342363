#!/usr/bin/env bash
# Session 30, fifth call (an H100): issue 4's paging benchmark with PagingConfig(pdl=True) (the touched path's kernels
# as programmatic dependents) as a variant of the default on its four pools, every ratio against copy_ on the same
# GPU in the same process; then zero-width index lists on the GPU's auto path (session 29's zero_width_gpu.py).
#   bash benchmarks/calls/h200_call_s30d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 330
timeout 90 python3 benchmarks/calls/zero_width_gpu.py > "$OUT/zero_width_gpu.log" 2>&1
echo "== zero_width_gpu rc=$?"; tail -4 "$OUT/zero_width_gpu.log"
pack_out
