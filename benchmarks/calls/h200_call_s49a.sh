#!/usr/bin/env bash
# Session 49: session 48's h200_call_s48c.sh (never run; removed, commit 8c6d0cb has it) with its steps reordered so
# that a call cut short (a tight device budget: run it with the time left as its limit) keeps what matters most
# first. The H200 only (stops at once on another card: s48c's A/Bs already ran on an H100 in session 48). $OUT is
# packed after each step.
# 1) the suite's fp8 / fp8_nope / fp8_ds_mla T=256 H=16 rows (issue 7's) benched against FlashInfer with the raw
#    kernel as shipped since session 48 (no L2 prefetch);
# 2) that kernel against the prefetch one tile ahead (l2_ahead=1, sessions 42-47) and issued after the tile's copies
#    (+l2_late), 5 times in alternating orders in one process (gluon_variant.py --reps 5);
# 3) the suite's three raw formats' T=128 H=16 rows;
# 4) the dequantizing Gluon kernels' group C with its next-tile prefetch and without (c_prefetch=True / False;
#    shipped: on in the wide kernel, off in the narrow one, by session 48's H100 A/Bs).
#   bash benchmarks/calls/h200_call_s49a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
bench_rows fp8 16 256 80; pack_now
bench_rows fp8_ds_mla 16 256 80; pack_now
bench_rows fp8_nope 16 256 80; pack_now
timeout 150 python3 benchmarks/calls/gluon_variant.py l2_ahead=1 l2_ahead=1+l2_late=True --reps 5 \
  --rows fp8:16:256,fp8_ds_mla:16:256,fp8_nope:16:256,fp8:16:128 > "$OUT/l2_ahead.log" 2>&1
echo "== gluon_variant l2_ahead rc=$?"; grep "^| \|FAILED\|Error" "$OUT/l2_ahead.log" | cut -c1-200 | tail -6
pack_now
bench_rows fp8 16 128 60; pack_now
bench_rows fp8_ds_mla 16 128 60; pack_now
bench_rows fp8_nope 16 128 60; pack_now
timeout 200 python3 benchmarks/calls/gluon_variant.py c_prefetch=True c_prefetch=False --reps 5 \
  --rows model1:16:256,model1:16:128,model1:128:128,model1:64:64,model1:16:16,fp8:128:128,fp8_ds_mla:128:128,\
fp8:16:16,fp8_ds_mla:16:64 \
  > "$OUT/c_prefetch.log" 2>&1
echo "== gluon_variant c_prefetch rc=$?"; grep "^| \|FAILED\|Error" "$OUT/c_prefetch.log" | cut -c1-200 | tail -11
pack_out
