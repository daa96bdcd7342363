#!/usr/bin/env bash
# Session 48 (the H200 only; on another card it stops at once): the raw kernel's L2 prefetch distance
# (GluonKernel.l2_ahead: G gathering tile j prefetches tile j + d into L2; shipped d = 1, 0 = none) on issue 7's
# "any fp8 format, T=256, H=16" rows and fp8 T=128 H=16, each variant checked like a tuning trial and timed 5 times in
# alternating orders in one process (gluon_variant.py --reps 5); then the suite's fp8 T=256 H=16 row benched again
# against FlashInfer (its run-to-run spread: call 2 measured 106.0 us there, raw_rows.py 102.3 in the same call).
#   bash benchmarks/calls/h200_call_s48a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
timeout 300 python3 benchmarks/calls/gluon_variant.py l2_ahead=0 l2_ahead=2 l2_ahead=3 --reps 5 \
  --rows fp8:16:256,fp8_nope:16:256,fp8_ds_mla:16:256,fp8:16:128 > "$OUT/l2_ahead.log" 2>&1
echo "== gluon_variant l2_ahead rc=$?"; grep "^| \|FAILED\|Error" "$OUT/l2_ahead.log" | cut -c1-200
pack_now
bench_rows fp8 16 256 100
pack_out
