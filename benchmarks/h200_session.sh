#!/usr/bin/env bash
# Session 16's second device call on the H200, for issue 7: the narrow kernel's one-stage variant (16
# heads, two programs per SM): correctness, and put against the shipped entries at 16 heads; the narrow
# kernel at 128 and 64 heads for T=1 and 4 (small_t_diag.py); then the 30 stale bench rows.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
end=$(( $(date +%s) + 520 ))
timeout 90 python3 benchmarks/gpu_correctness.py st1 > "$OUT/gpu_correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep -i "fail\|error\|Trace" "$OUT/gpu_correctness.log" | head
mkdir -p "$OUT/select1" "$OUT/select2"
timeout 200 python3 benchmarks/gluon_select.py "$OUT/select1" --narrow --one-stage --heads 16 --tokens 64,128,256 \
  --formats fp8_e4m3,fp8_ds_mla,model1 > "$OUT/gluon_select1.log" 2>&1
echo "== gluon_select one-stage rc=$?"; grep "T=\|written\|winner" "$OUT/gluon_select1.log" | cut -c1-330
timeout 70 python3 benchmarks/calls/small_t_diag.py > "$OUT/small_t_diag.log" 2>&1
echo "== small_t_diag rc=$?"; grep "^|\|nop" "$OUT/small_t_diag.log" | sort -u
timeout 80 python3 benchmarks/gluon_select.py "$OUT/select2" --narrow --formats auto --heads 16 --tokens 128 \
  > "$OUT/gluon_select2.log" 2>&1
echo "== gluon_select bf16 T=128 rc=$?"; grep "T=\|written\|winner" "$OUT/gluon_select2.log" | cut -c1-330
left=$(( end - $(date +%s) ))
bench_within $left "" "fp8 32 1,16" "fp8_ds_mla 16 1,4,16" "model1 16 1,4,16" "fp8_nope 128 4,16,64,256" \
  "fp8_nope 64 16,64,128,256,4096" "fp8_ds_mla 32 1,16" "model1 32 1,4,16" "fp8_nope 16 16" "fp8_nope 32 1,16" \
  "fp8 64 4096" "fp8_ds_mla 64 4096" "fp8_ds_mla 128 4096" "model1 64 4096" "model1 128 4096"
pack_out
