#!/usr/bin/env bash
# Prepared in session 36: on the H200 only, gluon_select.py at bf16 and bf16 NoPE T=16 H=64 (the wide kernel with 4,
# 8 and 16 splits: session 36's call 3 found 4 splits 1.016x and 1.023x against the shipped 8 on an H100), merged
# --only-faster into a copy of the tables, those rows benched against FlashInfer. Stops at once on another card.
#   bash benchmarks/calls/h200_call_s37c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
select_into t16_h64 240 --tokens 16 --heads 64 --formats auto
merged_tables t16_h64
bench_within 150 "$TABLES" "bf16 64 16" "bf16_nope 64 16"
pack_out
