#!/usr/bin/env bash
# Session 24, call 6 (issue 7): the persistent wide kernel with Q's first 256 columns copied early, against the
# shipped non-persistent kernel in ABBA order (benchmarks/calls/persistent_abba.py; call 5 found a first-of-a-pair
# bias of up to 3%), on the wide bf16 rows from T=128 and the prefill rows; bf16 T=64 H=128 is the null row.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 400 python3 benchmarks/calls/persistent_abba.py > "$OUT/persistent_abba.log" 2>&1
echo "== persistent_abba rc=$?"; grep "Error\|error:" "$OUT/persistent_abba.log" | head; sed -n '/^| format/,$p' "$OUT/persistent_abba.log"
pack_out
