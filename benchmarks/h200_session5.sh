#!/usr/bin/env bash
# Session 19, call 11 (about 1 minute): where a touched page_split call with the lead share spends the time
# beyond its TMA copy (benchmarks/calls/paging_lead_diag.py: the default path cut short at each step).
#   bash benchmarks/h200_session5.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/paging_lead_diag.py > "$OUT/paging_lead_diag.log" 2>&1
echo "== paging_lead_diag rc=$?"; grep -v "^\s*$" "$OUT/paging_lead_diag.log" | grep -v "Warn\|warn" | tail -30
pack_out
