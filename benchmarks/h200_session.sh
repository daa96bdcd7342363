#!/usr/bin/env bash
# Prepared at the end of session 18; run as session 19's call 1 (its candidates lost and were removed from the
# template since, so this script no longer runs as is: benchmarks/results/session19/README.md): bf16
# NoPE's Gluon correctness cases, then three candidates against the shipped entries (each checked like a
# tuning trial): GluonKernel.early_free (narrow entries), defer_pv and two_consumers (wide ones).
# benchmarks/h200_session2.sh is the call after it.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
# bf16 NoPE's Gluon cases (with 32-head programs at 128 heads) did not run in session 18
timeout 90 python3 benchmarks/gpu_correctness.py auto_nope512 gluon > "$OUT/gpu_correctness_nope.log" 2>&1
echo "== gpu_correctness bf16 NoPE Gluon rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_nope.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_nope.log" | head -5
# GluonKernel.early_free (prepared in session 18, compile-checked only: the narrow kernel's P.V in halves,
# the first half's value columns and the rope freed for the loader while the second runs; 0 B spilled
# with two stages, 80-104 B with one on Triton 3.6) against the shipped entries
timeout 115 python3 benchmarks/calls/gluon_variant.py early_free=True \
  --rows fp8:16:256,fp8_nope:16:256,model1:16:256,fp8_ds_mla:16:256,bf16:16:256,fp8:16:128,bf16:128:1,bf16:32:128 \
  > "$OUT/gluon_variant.log" 2>&1
echo "== gluon_variant rc=$?"; grep "^| \|FAILED\|Error" "$OUT/gluon_variant.log" | sort -u
# GluonKernel.defer_pv (prepared in session 18, compile-checked only: group B of the wide kernel leaves its
# P.V running into the next tile's S; 0 B spilled) against the shipped wide entries
timeout 115 python3 benchmarks/calls/gluon_variant.py defer_pv=True \
  --rows bf16:128:4,bf16:128:32,bf16:128:128,bf16:64:128,bf16_nope:128:128,bf16:128:4096,fp8:128:128,model1:128:128 \
  > "$OUT/gluon_variant_dp.log" 2>&1
echo "== gluon_variant defer_pv rc=$?"; grep "^| \|FAILED\|Error" "$OUT/gluon_variant_dp.log" | sort -u
# GluonKernel.two_consumers (prepared in session 18, compile-checked only: FlashMLA's division of the wide
# bf16 kernel, a producer and two consumers; 184 B spilled on Triton 3.6) against the shipped wide entries,
# alone (a hang would cost only this step)
timeout 120 python3 benchmarks/calls/gluon_variant.py two_consumers=True \
  --rows bf16:128:4,bf16:128:32,bf16:128:128,bf16:64:128,bf16_nope:128:128,bf16:128:4096 \
  > "$OUT/gluon_variant_x2.log" 2>&1
echo "== gluon_variant two_consumers rc=$?"; grep "^| \|FAILED\|Error" "$OUT/gluon_variant_x2.log" | sort -u
pack_out
