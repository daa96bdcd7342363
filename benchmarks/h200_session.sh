#!/usr/bin/env bash
# Session 13's fourth device call on the H200, for issue 7: the fp8_e4m3 Gluon dequantization
# through float32 (the f16 -> bf16 cvt was a slow F2F per element), then the fp8 rows.
#  1. GPU correctness of the Gluon kernel for fp8_e4m3 (576 and NoPE);
#  2. the fp8_e4m3 Gluon entries re-timed (gluon_select.py --remeasure; compare with call 3);
#  3. the bench rows of the fp8 formats with the shipped table and those re-timed entries over it.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 80 python3 benchmarks/gpu_correctness.py fp8_576 fp8_nope512 gluon > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error" "$OUT/gpu_correctness.log" | head -8 | cut -c1-200; tail -1 "$OUT/gpu_correctness.log" | cut -c1-300
timeout 150 python3 benchmarks/gluon_select.py "$OUT/tuned" --remeasure --formats fp8_e4m3 > "$OUT/gluon_select_remeasure.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_remeasure.log" \
  | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//' | cut -c1-110
bench_within 280 "$OUT/tuned" "fp8 128 1,4,16,32,64,128,256" "fp8_ds_mla 128 1,4,16,32,64,128,256" \
  "model1 128 1,4,16,32,64,128,256" "fp8 16 256" "fp8_ds_mla 16 256" "model1 16 256"
pack_out
