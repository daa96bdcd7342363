#!/usr/bin/env bash
# Session 36, after call 1 made the wide Gluon kernel's bfloat16 split-K partials the default: t1_configs.py (the
# T=1 configs of bf16 and bf16 NoPE with 128 and 64 heads, 16-, 32- and 64-head programs, checked and timed in
# rotating orders; any sm90 card), then the suite's rows whose H200 entries run the wide kernel with split-K merged
# by the combine kernel (T = 1, 4, 16, one at 64; 32-128 heads), benched against FlashInfer, one run per format.
#   bash benchmarks/calls/h200_call_s36c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 200 python3 benchmarks/calls/t1_configs.py > "$OUT/t1_configs.log" 2>&1
echo "== t1_configs rc=$?"; grep "^|\|Error" "$OUT/t1_configs.log" | tail -40 | cut -c1-150
bench_within 340 "" "bf16 64,128 4,16" "bf16_nope 64,128 4,16" "fp8 32,64,128 1,4,16" "fp8_nope 32,64,128 1,4,16" \
  "model1 32,64,128 1,4,16" "fp8_ds_mla 32,64,128 1,4,16" "fp8_nope 32 64"
pack_out
