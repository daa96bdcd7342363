#!/usr/bin/env bash
# Session 20, calls 1-2 (about 1 minute): benchmarks/calls/proto_tma_order.py. Call 1 (ca321e8): page_split's
# TMA copy with each program on a contiguous run of items, and the lead copy launched by PDL after the lead's
# compact; call 2: the copy prefetching the address translations of the item a few items ahead.
#   bash benchmarks/h200_session6.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 240 python3 benchmarks/calls/proto_tma_order.py > "$OUT/proto_tma_order.log" 2>&1
echo "== proto_tma_order rc=$?"; grep -v "^\s*$" "$OUT/proto_tma_order.log" | grep -v "Warn\|warn" | tail -45
pack_out
