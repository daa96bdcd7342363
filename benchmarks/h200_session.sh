#!/usr/bin/env bash
# Session 17 call 4: the rest of call 2's GPU correctness (fp8_ds_mla and model1, every Gluon case, Q
# loaded by the computing warp group); 16-head programs at T=1 for 64 and 128 heads, now also with one
# stage (two programs per SM), against the shipped entries (bf16 caches: every 16-head candidate; fp8
# caches at 128 heads: the one-stage ones), and those rows benched with the winners overlaid.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
for fmt in model1_p64 ds_mla; do  # (model1 first: call 2's ran out of time before it)
  timeout 50 python3 benchmarks/gpu_correctness.py $fmt gluon >> "$OUT/gpu_correctness.log" 2>&1
  echo "== correctness $fmt rc=$?"
done
grep -c " ok$" "$OUT/gpu_correctness.log"; grep -i "fail\|error\|Trace" "$OUT/gpu_correctness.log" | head
mkdir -p "$OUT/select"
timeout 100 python3 benchmarks/gluon_select.py "$OUT/select" --narrow --heads 128,64 --tokens 1 --formats auto \
  > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select bf16 rc=$?"
timeout 60 python3 benchmarks/gluon_select.py "$OUT/select" --narrow --one-stage --heads 128 --tokens 1 \
  --formats fp8_e4m3,fp8_ds_mla,model1 >> "$OUT/gluon_select.log" 2>&1
echo "== gluon_select fp8 rc=$?"; grep "T=\|written\|winner" "$OUT/gluon_select.log" | cut -c1-300
bench_within 80 "$OUT/select" "bf16 128 1" "bf16_nope 128 1" "bf16 64 1" "bf16_nope 64 1" "fp8 128 1" \
  "fp8_nope 128 1" "fp8_ds_mla 128 1" "model1 128 1"
pack_out
