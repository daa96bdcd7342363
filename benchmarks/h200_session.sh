#!/usr/bin/env bash
# Session 18, call 6 (the session's last device time): the Gluon correctness cases the earlier calls did
# not reach (model1's narrow cases, fp8_e4m3's one-stage ones), then bench rows of Gluon entries measured
# before this session's template changes (Q by cp.async), beside FlashInfer: first the rows of issue 7's
# targets (fp8_ds_mla and model1 T=128 H=128), then as many of the rest as the time allows.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 60 python3 benchmarks/gpu_correctness.py model1_p64 narrow > "$OUT/gpu_correctness_model1_narrow.log" 2>&1
echo "== gpu_correctness model1 narrow rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_model1_narrow.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_model1_narrow.log" | head -5
timeout 30 python3 benchmarks/gpu_correctness.py fp8_576 st1 > "$OUT/gpu_correctness_fp8_st1.log" 2>&1
echo "== gpu_correctness fp8_576 one stage rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_fp8_st1.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_fp8_st1.log" | head -5
bench_within 215 "" "fp8_ds_mla 128 128" "model1 128 128" "model1 128 1,4,16,32,64,256" "fp8_ds_mla 128 4,16,32,64,256" \
  "bf16 32 1,4,16,64,128,256" "bf16 16 16,64,128,256" "fp8 128 4,16,32,64,256" "model1 16 1,4,16,64,128" \
  "fp8_ds_mla 16 1,4,16,64,128" "bf16_nope 32 1,4,16,64,128,256"
pack_out
