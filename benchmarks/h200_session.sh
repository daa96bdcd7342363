#!/usr/bin/env bash
# The next planned call, prepared in session 29 (no machine was lent in sessions 28's end and 29). It checks
# session 29's changes on the GPU, then re-measures issue 4's open row:
#  1. torch.compile (benchmarks/calls/compile_gpu.py, the five rows of session 28's call 3, in three modes):
#     the operator is now defined with torch.library.Library (custom_op cost ~120 us of host time a call), and
#     "reduce-overhead+static" marks the cache static (CUDA-graph trees otherwise copy it at each replay).
#     Expected: the default mode near eager; reduce-overhead+static at about the kernel's time.
#  2. a zero-width list on the GPU's auto path (bf16 and model1 with an extra cache; tests/ check it on the CPU).
#  3. the paging benchmark (issue 4: page_split's scattered row at 0.78-0.81 of copy_, target 0.8).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|ERROR\|correctness" "$OUT/compile_gpu.log" | cut -c1-200
timeout 120 python3 benchmarks/calls/zero_width_gpu.py > "$OUT/zero_width_gpu.log" 2>&1
echo "== zero_width_gpu rc=$?"; tail -8 "$OUT/zero_width_gpu.log"
paging 200
pack_out
