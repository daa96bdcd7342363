#!/usr/bin/env bash
# Session 31, call 1 (ran on an H100; lazy_rescale was removed after it, so this script no longer runs as is): the
# short form of that session's first h200_call_s31d.sh for the device time left: only the two candidates' A/B
# (GluonKernel.bf16_scale and lazy_rescale against the shipped kernels, each checked like a tuning trial and timed in
# one process; gluon_variant.py) on model1 and fp8_e4m3 at T=256 H=16, issue 7's rows. Any sm90 GPU.
#   bash benchmarks/calls/h200_call_s31e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 280 python3 benchmarks/calls/gluon_variant.py bf16_scale=True+lazy_rescale=True lazy_rescale=True \
  bf16_scale=True bf16_scale=False bf16_scale=True+lazy_rescale=True lazy_rescale=True \
  --rows model1:16:256,fp8:16:256 > "$OUT/variants.log" 2>&1
echo "== gluon_variant rc=$?"; grep "^| \|FAILED\|Error" "$OUT/variants.log" | cut -c1-200
pack_out
