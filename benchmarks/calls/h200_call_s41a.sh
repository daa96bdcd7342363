#!/usr/bin/env bash
# Prepared in session 41. Any sm90 card: the shipped kernels at T=256 and 128, H=16, in all six formats, on the
# suite's slot pool and on a 16K-slot pool that stays in L2 (what the SMs need, card for card: an H100 gathers the
# fp8 rows near its bandwidth, the H200 does not).
#   bash benchmarks/calls/h200_call_s41a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 400 python3 benchmarks/calls/l2_pool_rows.py --tokens 256,128 > "$OUT/l2_pool_rows.log" 2>&1
echo "== l2_pool_rows rc=$?"; grep "^|\|Error\|error" "$OUT/l2_pool_rows.log" | tail -30
