#!/usr/bin/env bash
# Prepared at the end of session 18; run in session 19 (call 9) without its timeline step (about 8 minutes): 32-head
# programs at T=1 for 64 and 128 heads (selected, then benched with the selection's table); the bench rows
# of Gluon entries last measured before session 18's template change (Q by cp.async), beside FlashInfer
# (session 18's call 6 meant to run them but measured default configs: a template edit in the working
# tree as the call started made the installed table stale; check_tables now stops such a call); the
# phase timeline with the computing group's work split into S's wgmma, the softmax and P.V. Commit
# whatever the first call changed (a candidate made a rule: re-stamp or re-time first) before running it.
#   bash benchmarks/h200_session2.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
# 32-head programs at T=1 for 64 and 128 heads (gluon_select.py's new candidates), then those rows benched
# with the selection's table over the package's
mkdir -p "$OUT/select_t1"
timeout 110 python3 benchmarks/gluon_select.py "$OUT/select_t1" --narrow --tokens 1 --formats auto --heads 64,128 \
  > "$OUT/gluon_select_t1.log" 2>&1
echo "== gluon_select T=1 rc=$?"; grep "T=\|written\|Error" "$OUT/gluon_select_t1.log" | cut -c50-300
bench_within 60 "$OUT/select_t1" "bf16 128 1" "bf16_nope 128 1" "bf16 64 1" "bf16_nope 64 1"
bench_within 320 "" "fp8_ds_mla 128 128" "model1 128 128" "model1 128 1,4,16,32,64,256,4096" \
  "fp8_ds_mla 128 4,16,32,64,256,4096" "bf16 32 1,4,16,64,128,256" "bf16 16 16,64,128,256" \
  "fp8 128 4,16,32,64,256,4096" "model1 16 1,4,16,64,128" "fp8_ds_mla 16 1,4,16,64,128" \
  "bf16_nope 32 1,4,16,64,128,256" "bf16_nope 16 16,64,128,256" "fp8_nope 128 4,16,64,128,256,4096" \
  "fp8 32 1,16,64,128,256" "fp8_nope 32 1,16,64,128,256" "fp8_ds_mla 32 1,16,64,128,256" \
  "model1 32 1,4,16,64,128,256" "fp8 64 16,64,128,256,4096" "fp8_nope 64 16,64,128,256,4096" \
  "fp8_ds_mla 64 16,64,128,256,4096" "model1 64 16,64,128,256,4096" "fp8_nope 16 16,64,128"
pack_out
