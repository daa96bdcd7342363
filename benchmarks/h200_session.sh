#!/usr/bin/env bash
# Session 17 call 2: the Gluon kernels now load Q in the computing warp group for fp8 caches and the
# narrow kernel (gen/gluon.py's rule, from call 1's q_by_compute.py). GPU correctness of every Gluon
# case in every format, then the bench rows whose entries use those kernels, beside FlashInfer, in
# order of issue 7's rows first (a cut-off keeps the rows before it; the rest go to the next call).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 170 python3 benchmarks/gpu_correctness.py fp8_576 ds_mla model1_p64 fp8_nope512 auto576 gluon \
  > "$OUT/gpu_correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep -i "fail\|error\|Trace" "$OUT/gpu_correctness.log" | head
bench_within 390 "" "fp8 128 1,4,16,32,64,128,256" "fp8 16 16,64,128,256" "fp8_ds_mla 128 4,16,32,64,128,256" \
  "fp8_ds_mla 16 1,4,16,64,128,256" "model1 128 1,4,16,32,64,128,256" "model1 16 1,4,16,64,128,256" \
  "bf16 128 1" "bf16_nope 128 1" "bf16 64 1" "bf16_nope 64 1" "fp8_nope 128 4,16,64,128,256" \
  "fp8_nope 16 16,64,128,256" "bf16 16 16,64,128,256" "bf16_nope 16 16,64,128,256"
pack_out
