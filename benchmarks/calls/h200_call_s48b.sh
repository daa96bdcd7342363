#!/usr/bin/env bash
# Session 48 (any sm90 card; the card is printed, and only the H200's times may decide the H200's defaults): the L2
# prefetches' A/Bs, each variant checked like a tuning trial and timed 5 times in alternating orders in one process
# (gluon_variant.py --reps 5). 1) the raw kernel without its prefetch (GluonKernel.l2_ahead=0; on an H100 1.02-1.20x
# faster in 10 rows, calls 5-6) and with it issued after the tile's copies (l2_late=True) on issue 7's fp8 T=256 H=16
# rows and T=128; 2) the dequantizing Gluon kernels' group C
# without its next-tile prefetch (c_prefetch=False) on the H200 table's model1, fp8 and fp8_ds_mla Gluon entries of
# the suite's shapes (narrow and wide, split and not).
#   bash benchmarks/calls/h200_call_s48b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
echo "== $(nvidia-smi --query-gpu=name --format=csv,noheader)"
check_tables
timeout 200 python3 benchmarks/calls/gluon_variant.py l2_ahead=0 l2_late=True --reps 5 \
  --rows fp8:16:256,fp8_nope:16:256,fp8_ds_mla:16:256,fp8:16:128,fp8_ds_mla:16:128 > "$OUT/l2_ahead0.log" 2>&1
echo "== gluon_variant l2_ahead=0, l2_late=True rc=$?"; grep "^| \|FAILED\|Error" "$OUT/l2_ahead0.log" | cut -c1-200 | tail -7
pack_now
timeout 300 python3 benchmarks/calls/gluon_variant.py c_prefetch=False --reps 5 \
  --rows model1:16:256,model1:16:128,model1:128:128,model1:64:64,model1:128:4,fp8:128:128,fp8_ds_mla:128:128,fp8:16:16,fp8_ds_mla:64:32 \
  > "$OUT/c_prefetch.log" 2>&1
echo "== gluon_variant c_prefetch=False rc=$?"; grep "^| \|FAILED\|Error" "$OUT/c_prefetch.log" | cut -c1-200 | tail -11
pack_out
