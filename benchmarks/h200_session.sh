#!/usr/bin/env bash
# Session 18, call 2: the Gluon template with Q copied by cp.async (every chunk in flight at once;
# call 1's timeline showed Q's load as 5.6K of a 12.3K-cycle program at T=1) and q_regs=4 as the wide
# bf16 kernel's rule. GPU correctness of the changed kernels (q rows not 16-byte aligned in the
# sink/extra cases: the runtime copies them), the phase timeline again, then the bench rows of
# issue 7 beside FlashInfer in the same process.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 120 python3 benchmarks/gpu_correctness.py auto576 > "$OUT/gpu_correctness_bf16.log" 2>&1
echo "== gpu_correctness bf16 (Triton and Gluon) rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_bf16.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_bf16.log" | head
timeout 90 python3 benchmarks/gpu_correctness.py fp8_576 gluon > "$OUT/gpu_correctness_fp8.log" 2>&1
echo "== gpu_correctness fp8 Gluon rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_fp8.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_fp8.log" | head
timeout 100 python3 benchmarks/calls/gluon_timeline.py > "$OUT/gluon_timeline.log" 2>&1
echo "== gluon_timeline rc=$?"; grep "programs\|compute group starts\|program  \|tile 0 ready" "$OUT/gluon_timeline.log" | cut -c1-120
bench_within 330 "" "bf16 128 1,4,16,32,128" "bf16 128 4096" "bf16 64 1,4,128" "fp8 16 256" "fp8_nope 16 256" \
  "model1 16 256" "fp8_ds_mla 16 256" "fp8 128 1,128" "bf16_nope 128 1,128"
pack_out
