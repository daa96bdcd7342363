#!/usr/bin/env bash
# Prepared in session 44. Any sm90 card: GluonKernel.raw with a model1 cache (G rewrites each gathered row's e4m3 to
# the row's largest ue8m0 scale; M runs the e4m3 path with a scale per key, the rope's S^T and P.V on bf16): the Gluon
# narrow correctness cases (NaN-poisoned slots, -1 indices, topk_length, an all-invalid row, sinks and LSE; the
# one-split 16-head ones run raw), then raw_rows.py for model1 at T=128 and 256 (16 heads, and 32 at T=256) against
# the dequantizing kernel of the H200 table's config, on a cache whose rows' 7 scales spread over 2^16.
# Ran as session 44's call 1 (an H100) with benchmarks/results/session44/model1_raw.patch applied: slower than the
# dequantizing kernel and wrong where unreferenced slots hold NaN; the patch was not kept. Without it, both kernels
# that raw_rows.py times are the dequantizing one.
#   git apply benchmarks/results/session44/model1_raw.patch && bash benchmarks/calls/h200_call_s44a.sh
#   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 240 python3 benchmarks/gpu_correctness.py model1_p64 narrow > "$OUT/gpu_correctness_m1_narrow.log" 2>&1
echo "== gpu_correctness model1_p64 narrow rc=$?"; grep -c " ok" "$OUT/gpu_correctness_m1_narrow.log"
grep -v " ok" "$OUT/gpu_correctness_m1_narrow.log" | tail -12
raw_rows raw_rows_m1 240 --formats model1
