#!/usr/bin/env bash
# Session 19, call 2 (about 4 minutes): page_split's copy by TMA (benchmarks/calls/proto_tma_copy.py:
# alone against the list copy and copy_, then in whole touched calls), and GluonKernel.two_consumers
# against the shipped wide bf16 entries (call 1's attempt stopped at a conflict with the q_regs=4 rule
# in gluon_variant.py; the variant now derives the rule's fields again).
#   bash benchmarks/h200_session3.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 150 python3 benchmarks/calls/proto_tma_copy.py > "$OUT/proto_tma_copy.log" 2>&1
echo "== proto_tma_copy rc=$?"; grep "^| \|FAILED\|Error\|copy_ of" "$OUT/proto_tma_copy.log" | head -60
timeout 100 python3 benchmarks/calls/gluon_variant.py two_consumers=True \
  --rows bf16:128:32,bf16:128:128,bf16:64:128,bf16_nope:128:128 \
  > "$OUT/gluon_variant_x2.log" 2>&1
echo "== gluon_variant two_consumers rc=$?"; grep "^| \|FAILED\|Error\|expected" "$OUT/gluon_variant_x2.log" | sort -u | cut -c1-200
pack_out
