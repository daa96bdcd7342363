#!/usr/bin/env bash
# Prepared in session 43. Any sm90 card: GluonKernel.raw with an fp8_ds_mla cache (the raw-row kernel with a wgmma per
# 128-dim group for S^T and a P.V per group with P times the keys' scales): the Gluon narrow correctness cases
# (NaN-poisoned slots, -1 indices, topk_length, an all-invalid row, sinks and LSE; the one-split 16-head ones run raw),
# then raw_rows.py for fp8_ds_mla at T=128 and 256 (16 heads, and 32 at T=256) against the dequantizing kernel of the
# H200 table's config, on a cache whose rows' scales spread over 2^16.
#   bash benchmarks/calls/h200_call_s43a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 200 python3 benchmarks/gpu_correctness.py ds_mla narrow > "$OUT/gpu_correctness_ds_narrow.log" 2>&1
echo "== gpu_correctness ds_mla narrow rc=$?"; grep -c " ok" "$OUT/gpu_correctness_ds_narrow.log"
grep -v " ok" "$OUT/gpu_correctness_ds_narrow.log" | tail -12
raw_rows raw_rows_ds 240 --formats fp8_ds_mla
