#!/usr/bin/env bash
# Session 18, call 3. Call 2 (Q by cp.async, q_regs=4) sped up the bf16 rows (T=128 H=128 157 -> 147 us,
# prefill T=4096 536 TFLOP/s) but fp8_e4m3 T=256 H=16 read 142.7 us against 132.1 in session 17. Here:
# Q by cp.async against Q loaded chunk by chunk (GluonKernel.q_async=False, the template before) in one
# process; the phase timeline with the new per-tile sums of barrier waits; then the H=64 and H=128 bf16
# Gluon entries re-timed (and their backend against FlashInfer re-chosen) for the tuned table.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 150 python3 benchmarks/calls/gluon_variant.py q_async=False \
  --rows fp8:16:256,fp8_nope:16:256,model1:16:256,bf16:128:1,bf16:128:128,fp8:128:128 > "$OUT/gluon_variant.log" 2>&1
echo "== gluon_variant rc=$?"; grep "^| \|FAILED\|Error" "$OUT/gluon_variant.log" | sort -u
timeout 90 python3 benchmarks/calls/gluon_timeline.py --rows fp8:16:256,fp8_nope:16:256,bf16:128:1,bf16:128:128 \
  > "$OUT/gluon_timeline.log" 2>&1
echo "== gluon_timeline rc=$?"; grep -v "^ *$" "$OUT/gluon_timeline.log" | grep -v "Warn\|spread\|clock while\|phase  " | cut -c1-110
mkdir -p "$OUT/select"
timeout 300 python3 benchmarks/gluon_select.py "$OUT/select" --remeasure --formats auto --heads 64,128 \
  > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select --remeasure rc=$?"; grep "T=\|written\|Error" "$OUT/gluon_select.log" | cut -c1-200
pack_out
