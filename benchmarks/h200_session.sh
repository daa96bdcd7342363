#!/usr/bin/env bash
# Session 14's first device call on the H200, for issue 7: the narrow Gluon kernel (heads as wgmma's
# N, 16 or 32 per program) for TP-sharded heads.
#  1. GPU correctness of the narrow kernel, every format (H 16, 32, 24; splits 1/4; sinks + LSE);
#  2. gluon_select.py --narrow on the H=16 and H=32 buckets of T=64..256 (the narrow kernel against the
#     shipped entry, same process), fp8_e4m3 and bf16 first;
#  3. the bench rows at H=16 (T=128, 256) with those entries over the shipped table, beside FlashInfer.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 150 python3 benchmarks/gpu_correctness.py narrow > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error" "$OUT/gpu_correctness.log" | head -8 | cut -c1-200; tail -1 "$OUT/gpu_correctness.log" | cut -c1-300
timeout 230 python3 benchmarks/gluon_select.py "$OUT/tuned" --narrow --heads 16,32 --tokens 64,128,256 \
  --formats fp8_e4m3,auto,fp8_ds_mla,model1 > "$OUT/gluon_select_narrow.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_narrow.log" \
  | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//; s/ w8 st2//g; s/ n64//g' | cut -c1-170
bench_within 150 "$OUT/tuned" "fp8 16 128,256" "bf16 16 128,256" "fp8_ds_mla 16 256" "model1 16 256"
pack_out
