#!/usr/bin/env bash
# Session 31: issue 4's paging benchmark on an H200 (not measured on one since session 19; session 30's runs were on an
# H100), then what one torch.compile'd call runs on the GPU (compile_gpu.py --profile: session 30 found
# mode="reduce-overhead" about twice the eager call's wall time at bf16 T=128 H=128, with or without the cache
# marked static).
# (On another GPU, the profile only.)
#   bash benchmarks/calls/h200_call_s31c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
case "$gpu" in *H200*) paging 300 ;; *) echo "== not an H200: no paging run" ;; esac
timeout 180 python3 benchmarks/calls/compile_gpu.py --rows bf16:128:128 --profile > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep -v "^USDT\|^STAGE\|^\[W" "$OUT/compile_gpu.log" | tail -60 | cut -c1-150
pack_out
