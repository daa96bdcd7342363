#!/usr/bin/env bash
# Prepared at the end of session 18, to run after benchmarks/h200_session.sh (about 8 minutes): the bench
# rows of Gluon entries last measured before session 18's template change (Q by cp.async), beside
# FlashInfer. Session 18's call 6 meant to run them but measured default configs (a template edit in the
# working tree as the call started made the installed table stale; check_tables now stops such a call).
# Then the phase timeline with the computing group's work split into S's wgmma, the softmax and P.V.
# Merge the first call's T=1 selection into tuned/NVIDIA_H200 (benchmarks/merge_tuned.py) and commit first.
#   bash benchmarks/h200_session2.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
bench_within 400 "" "fp8_ds_mla 128 128" "model1 128 128" "model1 128 1,4,16,32,64,256,4096" \
  "fp8_ds_mla 128 4,16,32,64,256,4096" "bf16 32 1,4,16,64,128,256" "bf16 16 16,64,128,256" \
  "fp8 128 4,16,32,64,256,4096" "model1 16 1,4,16,64,128" "fp8_ds_mla 16 1,4,16,64,128" \
  "bf16_nope 32 1,4,16,64,128,256" "bf16_nope 16 16,64,128,256" "fp8_nope 128 4,16,64,128,256,4096" \
  "fp8 32 1,16,64,128,256" "fp8_nope 32 1,16,64,128,256" "fp8_ds_mla 32 1,16,64,128,256" \
  "model1 32 1,4,16,64,128,256" "fp8 64 16,64,128,256,4096" "fp8_nope 64 16,64,128,256,4096" \
  "fp8_ds_mla 64 16,64,128,256,4096" "model1 64 16,64,128,256,4096" "fp8_nope 16 16,64,128"
timeout 90 python3 benchmarks/calls/gluon_timeline.py --rows fp8:16:256,bf16:128:128,bf16:128:1 \
  > "$OUT/gluon_timeline.log" 2>&1
echo "== gluon_timeline rc=$?"; grep -v "^ *$" "$OUT/gluon_timeline.log" | grep -v "Warn\|spread\|clock while\|phase  " | cut -c1-110
pack_out
