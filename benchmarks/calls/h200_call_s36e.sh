#!/usr/bin/env bash
# Session 36, a third try at the H200 (calls 2 and 3 got H100s; call 3 found the shipped wide split counts still the
# fastest with bfloat16 partials). On the H200: the suite's rows whose entries run the wide Gluon kernel with split-K
# merged by the combine kernel, benched against FlashInfer (as call 2 did on the H100). Then, on any card, every Gluon
# case of gpu_correctness.py with the runtime's defaults (both kernels' bfloat16 partials).
#   bash benchmarks/calls/h200_call_s36e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
limit=480
if [[ "$gpu" == *H200* ]]; then
  bench_within 330 "" "bf16 64,128 4,16" "bf16_nope 64,128 4,16" "fp8 32,64,128 1,4,16" "fp8_nope 32,64,128 1,4,16" \
    "model1 32,64,128 1,4,16" "fp8_ds_mla 32,64,128 1,4,16" "fp8_nope 32 64"
  limit=150
fi
timeout $limit python3 benchmarks/gpu_correctness.py gluon > "$OUT/correctness_gluon.log" 2>&1
echo "== gpu_correctness gluon rc=$?"; grep -c " ok$" "$OUT/correctness_gluon.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_gluon.log" | head
pack_out
