#!/usr/bin/env bash
# Prepared at the end of session 24, not yet run (session 24's last call, 9, benched the staged output's rows).
# The bf16 prefill rows run the persistent kernel (runtime/triton_backend.persistent_for), which cannot stage its
# output (a stage holds the next unit's tile 0 then), and every other wide row now writes through a stage
# (_staged_out, 1.025-1.087x). Which is faster at prefill? benchmarks/calls/persistent_abba.py times, in ABBA
# order, its "shipped" column = persistent forced off (so the staged non-persistent kernel) against its
# "persistent" column = the persistent kernel; bf16 T=64 H=128 is the null row (128 units: both staged).
# If staged wins, narrow persistent_for (or drop it), re-bench the two bf16 prefill rows beside FlashInfer and
# merge them (benchmarks/merge_bench.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/persistent_abba.py --rows bf16:64:128,bf16:4096:128,bf16:4096:64 \
  > "$OUT/prefill_abba.log" 2>&1
echo "== prefill_abba rc=$?"; grep "Error\|error:" "$OUT/prefill_abba.log" | head; sed -n '/^| format/,$p' "$OUT/prefill_abba.log"
pack_out
