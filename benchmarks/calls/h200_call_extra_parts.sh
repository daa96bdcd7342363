#!/usr/bin/env bash
# Prepared in session 25 (no device time then), not yet run: a call with an extra cache (DeepSeek-V4's SWA beside
# its compressed cache) as one Triton kernel (the runtime's default) or as two launches and a merge
# (runtime/triton_backend.PartsLaunch, SPARSEMLA_EXTRA_PARTS=1), checked against the reference and timed ABBA
# (benchmarks/calls/extra_parts.py). If parts win where the main list runs the Gluon kernel, make that the rule
# (triton_backend.extra_parts) and say where it loses. Session 27 added a third variant, "gluon" (one Gluon launch
# whose last splits walk the extra list, SPARSEMLA_EXTRA_GLUON=1, never run before): check its correctness lines
# first. If it is correct and fastest, make it the rule (triton_backend.extra_gluon) and let the tuner search it
# (gen/search_space.py). Then (session 26) the torch.compile check, compile_gpu.py.
#   bash benchmarks/calls/h200_call_extra_parts.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 420 python3 benchmarks/calls/extra_parts.py > "$OUT/extra_parts.log" 2>&1
echo "== extra_parts rc=$?"; grep "correctness:\|FAIL\|Error\|error:" "$OUT/extra_parts.log" | head
sed -n '/^| format/,$p' "$OUT/extra_parts.log"
# Session 26 (prepared without a GPU): sparse_mla as torch.ops.sparsemla.sparse_mla inside Inductor graphs, plain
# and with CUDA graphs, against the eager call (benchmarks/calls/compile_gpu.py).
timeout 170 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|correctness\|ERROR" "$OUT/compile_gpu.log" | cut -c1-160
pack_out
