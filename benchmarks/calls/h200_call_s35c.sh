#!/usr/bin/env bash
# Session 35: the suite's rows whose H200 entries run the narrow Gluon kernel with split-K (T = 1, 4, 16, 64, every
# head count), measured with bfloat16 partials (GluonKernel.parts_bf16, now the runtime's default) against FlashInfer
# in the same runs, one run per format (at most 500 s).
#   bash benchmarks/calls/h200_call_s35c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
bench_within 500 "" "bf16 16,32,64,128 1,4,16,64" "fp8 16,32,64,128 1,4,16,64" "fp8_ds_mla 16,32,64,128 1,4,16,64" \
  "model1 16,32,64,128 1,4,16,64" "bf16_nope 16,32,64,128 1,4,16,64" "fp8_nope 16,32,64,128 1,4,16,64"
pack_out
