#!/usr/bin/env bash
# Session 20, call 9 (about 2 minutes): T=1 Gluon configs of 32-64 programs (the combine then a programmatic
# dependent) against the shipped ones, bf16 and bf16 NoPE at 64 and 128 heads (benchmarks/calls/t1_pdl_configs.py).
#   bash benchmarks/h200_session12.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 400 python3 benchmarks/calls/t1_pdl_configs.py > "$OUT/t1_pdl_configs.log" 2>&1
echo "== t1_pdl_configs rc=$?"; grep "^|" "$OUT/t1_pdl_configs.log" | sort -u | head -40
pack_out
