#!/usr/bin/env bash
# Session 18, call 4. Call 3: Q by cp.async was 5% slower than Q loaded chunk by chunk for fp8_e4m3
# T=256 H=16 (136.5 vs 129.6 us), 2% faster for fp8 NoPE, 9% faster for bf16 T=1 H=128, equal
# elsewhere. Here that A/B again on more narrow fp8 rows (is it a rule for one-stage fp8 with d_qk 576,
# or noise?); 16-head programs at T=1 for 64 and 128 heads again, now that Q no longer dominates them
# (gluon_select.py --narrow, one stage included); then the bf16 bench rows at 64 and 128 heads that
# call 2 did not re-measure, beside FlashInfer.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 130 python3 benchmarks/calls/gluon_variant.py q_async=False \
  --rows fp8:16:256,fp8_ds_mla:16:256,fp8:16:128,fp8_nope:16:256,bf16:16:256,fp8:16:1,fp8:32:256 \
  > "$OUT/gluon_variant.log" 2>&1
echo "== gluon_variant rc=$?"; grep "^| \|FAILED\|Error" "$OUT/gluon_variant.log" | sort -u
mkdir -p "$OUT/select"
timeout 130 python3 benchmarks/gluon_select.py "$OUT/select" --narrow --tokens 1 --formats auto --heads 64,128 \
  > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select --narrow T=1 rc=$?"; grep "T=\|written\|Error" "$OUT/gluon_select.log" | cut -c60-260
bench_within 320 "" "bf16 128 64,256" "bf16 64 16,64,256" "bf16_nope 128 4,16,32,64,256" "bf16_nope 64 1,4,16,64,128,256" \
  "bf16 64 4096" "bf16_nope 128 4096" "bf16_nope 64 4096"
pack_out
