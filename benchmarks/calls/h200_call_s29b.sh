#!/usr/bin/env bash
# Prepared in session 29: the call after benchmarks/h200_session.sh.
#  1. torch.compile (benchmarks/calls/compile_gpu.py, session 28's five rows, three modes): the operator is now a
#     torch.library.Library definition (custom_op cost ~120 us of host time a call), and "reduce-overhead+static"
#     marks the cache static (CUDA-graph trees otherwise copy it at each replay). Expected: the default mode near
#     eager, reduce-overhead+static at about the kernel's time, plain reduce-overhead ~140 us (bf16) above it.
#  2. issue 4's open row (page_split's scattered pool at 0.78-0.81 of copy_, target 0.8 reliably): the paging
#     benchmark, with PagingConfig(pdl=True) (the touched path's kernels as programmatic dependents) as a variant of
#     the default on its four pools.
#   bash benchmarks/calls/h200_call_s29b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 200 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|ERROR\|correctness" "$OUT/compile_gpu.log" | cut -c1-200
paging 300
pack_out
