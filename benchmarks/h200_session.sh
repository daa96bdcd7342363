#!/usr/bin/env bash
# Prepared at the end of session 24, not yet run (session 24's last call, 9, benched the staged output's rows).
# The bf16 prefill rows run the persistent kernel with direct stores (runtime/triton_backend.persistent_for);
# every other wide row writes through a stage (_staged_out, 1.025-1.087x). benchmarks/calls/prefill_out.py checks
# and times three variants (staged, persistent, persistent+staged: the persistent kernel writing through the last
# tile's stage, never run on the GPU yet) in rotated orders at prefill and T=128-256 with 128 heads.
# First gpu_correctness.py's new `persistent` cases (T=1100, 128 heads: persistent by the rule with rope, staged
# without). Then: set the rules to the winner (persistent_for, _staged_out), re-bench the rows that change beside FlashInfer
# and merge them (benchmarks/merge_bench.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 120 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 persistent > "$OUT/gpu_correctness_persistent.log" 2>&1
echo "== gpu_correctness persistent rc=$?"; tail -3 "$OUT/gpu_correctness_persistent.log"
timeout 420 python3 benchmarks/calls/prefill_out.py > "$OUT/prefill_out.log" 2>&1
echo "== prefill_out rc=$?"; grep "correctness:\|FAIL\|Error\|error:" "$OUT/prefill_out.log" | head
sed -n '/^| format/,$p' "$OUT/prefill_out.log"
pack_out
