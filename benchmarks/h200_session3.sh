#!/usr/bin/env bash
# Session 19 (call 2 ran this file as of commit 0a1001c: the TMA copy alone and two_consumers). Call 3
# (about 2 minutes): whole touched page_split calls with the TMA copy for the lead share and the list
# or TMA copy for the rest (benchmarks/calls/proto_tma_copy.py), lead 1/8, 1/16, 1/32 and none.
#   bash benchmarks/h200_session3.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 240 python3 benchmarks/calls/proto_tma_copy.py > "$OUT/proto_tma_copy.log" 2>&1
echo "== proto_tma_copy rc=$?"; grep "^| \|FAILED\|Error\|copy_ of" "$OUT/proto_tma_copy.log" | head -60
pack_out
