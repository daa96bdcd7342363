#!/usr/bin/env bash
# Session 30, sixth call (an H100): pdl_wait (the wait alone; s30b found it 0.1-0.26 us faster in every small-T row it
# timed) against the shipped launch on more kinds of rows before it becomes the default: fp8_ds_mla and model1 at small
# T, a narrow one-stage fp8 row (two programs an SM), a NoPE T=1 row, a mid-T row, and the bf16 prefill row with the
# tail split on (the persistent kernel), ABBA over six repetitions, each variant checked against the reference first.
#   bash benchmarks/calls/h200_call_s30e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
ROWS="fp8_ds_mla:1:128,model1:4:128,bf16_nope:1:64,fp8_nope:16:16,bf16:64:64,fp8:256:16,bf16:4096:128"
SPARSEMLA_TAIL_SPLIT=1 timeout 480 python3 benchmarks/calls/pdl_wait.py --check-rows "" --variants plain,wait \
  --rows "$ROWS" > "$OUT/pdl_wait2.log" 2>&1
echo "== pdl_wait plain,wait rc=$?"; grep "FAIL\|Error" "$OUT/pdl_wait2.log" | head; grep "^| " "$OUT/pdl_wait2.log" | sort -u
pack_out
