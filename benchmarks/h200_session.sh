#!/usr/bin/env bash
# Session 24, call 5 (issue 7, a diagnostic): the wide bf16 kernel's time against the tiles per unit at T=64 and
# T=128 with 128 heads, shipped and persistent (benchmarks/calls/wide_tiles.py): per-tile cost and the part that
# does not scale with the tiles.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/wide_tiles.py > "$OUT/wide_tiles.log" 2>&1
echo "== wide_tiles rc=$?"; grep "check:\|Error\|error:" "$OUT/wide_tiles.log" | head; sed -n '/^| format/,$p' "$OUT/wide_tiles.log"
pack_out
