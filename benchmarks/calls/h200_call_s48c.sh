#!/usr/bin/env bash
# Session 48, after the L2 prefetches were dropped from the raw kernel (GluonKernel.l2_ahead 0; on an H100 1.02-1.20x
# faster without it, calls 5-6) and from the narrow dequantizing kernel (c_prefetch's rule, calls 14-15). Any sm90 card
# (printed); the bench steps on the H200 only. Variants are checked like a tuning
# trial and timed 5 times in alternating orders in one process (gluon_variant.py --reps 5).
# 1) the raw kernel as shipped against the prefetch one tile ahead (l2_ahead=1, the kernel of sessions 42-47), and
#    issued after the tile's copies (+l2_late), on issue 7's fp8 T=256 H=16 rows and fp8 T=128;
# 2) H200: the suite's fp8 / fp8_nope / fp8_ds_mla T=256 H=16 rows benched against FlashInfer;
# 3) the dequantizing Gluon kernels' group C with its next-tile prefetch and without (c_prefetch=True / False; shipped:
#    on in the wide kernel, off in the narrow one, by calls 14-15 on an H100) on the table's model1, fp8 and
#    fp8_ds_mla Gluon entries of the suite's shapes (narrow and wide, split and not);
# 4) H200: the suite's three raw formats' T=128 H=16 rows.
# $OUT is packed after each step.
#   bash benchmarks/calls/h200_call_s48c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 150 python3 benchmarks/calls/gluon_variant.py l2_ahead=1 l2_ahead=1+l2_late=True --reps 5 \
  --rows fp8:16:256,fp8_nope:16:256,fp8_ds_mla:16:256,fp8:16:128 > "$OUT/l2_ahead.log" 2>&1
echo "== gluon_variant l2_ahead rc=$?"; grep "^| \|FAILED\|Error" "$OUT/l2_ahead.log" | cut -c1-200 | tail -6
pack_now
if [[ "$gpu" == *H200* ]]; then
  bench_rows fp8 16 256 80; pack_now
  bench_rows fp8_nope 16 256 80; pack_now
  bench_rows fp8_ds_mla 16 256 80; pack_now
fi
timeout 200 python3 benchmarks/calls/gluon_variant.py c_prefetch=True c_prefetch=False --reps 5 \
  --rows model1:16:256,model1:16:128,model1:128:128,model1:64:64,model1:16:16,fp8:128:128,fp8_ds_mla:128:128,\
fp8:16:16,fp8_ds_mla:16:64 \
  > "$OUT/c_prefetch.log" 2>&1
echo "== gluon_variant c_prefetch rc=$?"; grep "^| \|FAILED\|Error" "$OUT/c_prefetch.log" | cut -c1-200 | tail -11
pack_now
if [[ "$gpu" == *H200* ]]; then
  bench_rows fp8 16 128 60; pack_now
  bench_rows fp8_nope 16 128 60; pack_now
  bench_rows fp8_ds_mla 16 128 60
fi
pack_out
