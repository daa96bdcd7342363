#!/usr/bin/env bash
# Session 33: where a T=1 program's time goes (issue 7's bf16 T=1 H=128 row, 9.3 us against a target of 8):
# gluon_timeline.py's phases for the shipped T=1 entries (two-tile programs at H=128, one-tile ones at H=64).
#   bash benchmarks/calls/h200_call_s33b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 240 python3 benchmarks/calls/gluon_timeline.py --rows bf16:128:1,bf16:64:1,bf16_nope:128:1,bf16:128:4,bf16:16:1 \
  > "$OUT/timeline_t1.log" 2>&1
echo "== gluon_timeline rc=$?"; grep -v "^\[W\|^USDT\|^STAGE" "$OUT/timeline_t1.log" | tail -80
pack_out
