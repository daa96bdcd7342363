#!/usr/bin/env bash
# Session 31: two candidates that cut the instructions a tile (benchmarks/results/session31/README.md), against the
# shipped kernels, each checked like a tuning trial and timed in one process (gluon_variant.py; "-" where a variant does
# not apply; the shipped kernel twice): GluonKernel.bf16_scale (group C applies model1's ue8m0 scales to the packed
# bf16 values: C's loop 1003 -> 877 instructions, SASS of Triton 3.6) and lazy_rescale (the narrow kernel's O^T
# rescale skipped while no head's max grew by more than 8: M's loop 476 -> ~417 issued); then the suite's
# bench of the fp8 formats' T=1 and T=4 rows at 128 heads (their Gluon kernels now wait for the stream's previous
# kernel, GluonKernel.pdl_wait) against FlashInfer in the same process, for ../results/NVIDIA_H200.md.
# (On another GPU, after the A/B, compile_gpu.py --profile as in h200_call_s31c.sh, not the bench.)
#   bash benchmarks/calls/h200_call_s31d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 300 python3 benchmarks/calls/gluon_variant.py bf16_scale=True+lazy_rescale=True lazy_rescale=True \
  bf16_scale=True bf16_scale=False bf16_scale=True+lazy_rescale=True lazy_rescale=True \
  --rows model1:16:256,fp8:16:256,model1:16:64,model1:128:4 > "$OUT/variants.log" 2>&1
echo "== gluon_variant rc=$?"; grep "^| \|FAILED\|Error" "$OUT/variants.log" | cut -c1-200
case "$gpu" in
  *H200*) bench_within 160 "" "fp8 128 1,4" "model1 128 1,4" "fp8_ds_mla 128 1,4" "fp8_nope 128 1,4" ;;
  *) timeout 180 python3 benchmarks/calls/compile_gpu.py --rows bf16:128:128 --profile > "$OUT/compile_gpu.log" 2>&1
     echo "== not an H200: compile_gpu rc=$?"; grep -v "^USDT\|^STAGE\|^\[W" "$OUT/compile_gpu.log" | tail -60 | cut -c1-150 ;;
esac
pack_out
