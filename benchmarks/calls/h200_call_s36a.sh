#!/usr/bin/env bash
# Prepared in session 35 for the next device time: with bfloat16 split-K partials (half the bytes the T=1 programs
# write), 32-head programs may now beat the 16-head ones at T=1 H=128 (session 19 measured them with float32
# partials: 10.5-11.8 against 9.0-10.1 us; each SM gathers one tile instead of two). gluon_select.py's narrow
# candidates at T=1 H=128 (16 heads with 8, 16 or 32 splits, one stage with 16 or 32, 32 heads with 16 or 32 splits)
# beside the shipped entries in one process, merged --only-faster into a copy of the tables, those rows benched against
# FlashInfer (at most 560 s). On the H200 only: the tables are the H200's (on another card, compare within the call).
# Not run: session 36's call 2 (an H100, t1_configs.py) found 32-head programs 0.77-0.86x at T=1 with bfloat16
# partials, and no other tiling faster than the shipped ones.
#   bash benchmarks/calls/h200_call_s36a.sh [HEADS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
heads=${1:-128}
select_into narrow_t1 360 --narrow --tokens 1 --heads "$heads"
merged_tables narrow_t1
bench_within 170 "$TABLES" "bf16 $heads 1" "fp8 $heads 1" "fp8_ds_mla $heads 1" "model1 $heads 1" "bf16_nope $heads 1" \
  "fp8_nope $heads 1"
pack_out
