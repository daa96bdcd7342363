#!/usr/bin/env bash
# Prepared at the end of session 17, not yet run (the session's device time was spent): the wide bf16
# Gluon kernel with Q's first 256 or 384 columns in group B's registers (GluonKernel.q_regs 4 / 6; S
# then reads only K there from shared memory), with P for B's own P.V from registers (p_regs), and
# both, against the shipped entries at the bf16 rows of issue 7 that trail FlashInfer; then
# FlashInfer's times for those rows from the same process (bench). Between them, the phase timeline of
# six shipped entries (benchmarks/calls/gluon_timeline.py: a profile build's clock stamps), for
# where T=1 and the fp8 T=256 H=16 rows lose their time.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 300 python3 benchmarks/calls/gluon_variant.py q_regs=4 q_regs=6 p_regs=True q_regs=4+p_regs=True \
  --rows bf16:128:32,bf16:128:128,bf16:64:128,bf16_nope:128:128,bf16:128:16,bf16:128:4096 \
  > "$OUT/gluon_variant.log" 2>&1
echo "== gluon_variant rc=$?"; grep "^| \|FAILED\|Error" "$OUT/gluon_variant.log" | sort -u
timeout 120 python3 benchmarks/calls/gluon_timeline.py > "$OUT/gluon_timeline.log" 2>&1
echo "== gluon_timeline rc=$?"; grep -v "^ *$" "$OUT/gluon_timeline.log" | grep -v Warn | tail -80 | cut -c1-160
bench_within 120 "" "bf16 128 16,32,128" "bf16 64 128"
pack_out
