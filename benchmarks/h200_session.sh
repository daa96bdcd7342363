#!/usr/bin/env bash
# The next device call on the H200 (planned at the end of session 12), for issue 7:
#  1. session 13's first candidate, benchmarks/calls/gluon_n32.py (the shipped Gluon kernel with 32-row
#     tiles in 4 stages and S(j+1) issued before the softmax of tile j; compile-checked, never run),
#     checked against the fp32 reference and timed beside the shipped kernel and FlashInfer;
#  2. bf16 GPU correctness of the bf16 576 cache, the Gluon kernel at 128, 32 and 16 heads included;
#  3. benchmarks/gluon_select.py for the 16- and 32-head specs (the Gluon kernel masking the rest of its
#     64-row block), winners into $OUT/tuned (merge with benchmarks/merge_tuned.py);
#  4. the bf16 bench rows session 12 could not re-measure with its final template.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 150 python3 benchmarks/calls/proto_gluon.py > "$OUT/proto_gluon.out" 2>&1
echo "== proto_gluon rc=$?"; grep -v "^check\|^T=\|flashinfer.jit" "$OUT/proto_gluon.out" | tail -12; grep "FAIL\|ERROR" "$OUT/proto_gluon.out" | head -6 | cut -c1-300
timeout 90 python3 benchmarks/gpu_correctness.py auto576 > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error" "$OUT/gpu_correctness.log" | head -5; tail -1 "$OUT/gpu_correctness.log"
timeout 120 python3 benchmarks/gluon_select.py "$OUT/tuned" --heads 16,32 > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries\|winner" "$OUT/gluon_select.log" | sed 's/sparse_mla-sm90-auto-qk576-v512-//; s/-k2048-p1-qbf16-cbf16//' | cut -c1-150
bench_within 200 "" "bf16 128 1,4,16,32,64,256,4096" "bf16 64 4,16,64,128,256,4096"
pack_out
