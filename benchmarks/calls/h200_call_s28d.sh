#!/usr/bin/env bash
# Session 28, call 5: GluonKernel.f16_stage=True (the narrow fp8_e4m3 kernel's stage, Q and P^T in fp16: group C
# converts e4m3 in one cvt a pair instead of three instructions through float32) against the shipped entries, each
# checked like a tuning trial (NaN in unreferenced slots) and timed (gluon_variant.py: shipped, variant, shipped).
#   bash benchmarks/calls/h200_call_s28d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 300 python3 benchmarks/calls/gluon_variant.py f16_stage=True \
  --rows fp8:16:256,fp8:16:128,fp8:16:64,fp8:32:256,fp8:16:16,fp8_nope:16:256 > "$OUT/f16_stage.log" 2>&1
echo "== gluon_variant f16_stage rc=$?"; grep "^|\|FAIL\|Error\|skipped" "$OUT/f16_stage.log" | cut -c1-160
pack_out
