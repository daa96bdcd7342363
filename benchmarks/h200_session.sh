#!/usr/bin/env bash
# Session 18, call 5. After call 4: Q is loaded chunk by chunk again (not by cp.async) in 16-head programs
# with an fp8_e4m3 cache and d_qk 576 (GluonKernel's q_async rule: 2-5% faster in the three rows timed);
# T=1 at 64 and 128 heads re-selected. Here: GPU correctness of the Gluon cases not yet run this session;
# the T=32 bucket at 128 heads (bf16 NoPE has none: it ran the T=16 entry's 4 splits) selected and its
# bench rows run with the selection's table; then the bench rows whose results calls 2 and 4 lost (two
# runs into one folder) and the rows the new rule and selections change, beside FlashInfer.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 60 python3 benchmarks/gpu_correctness.py fp8_576 narrow > "$OUT/gpu_correctness_fp8_narrow.log" 2>&1
echo "== gpu_correctness fp8_576 narrow rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_fp8_narrow.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_fp8_narrow.log" | head -5
timeout 170 python3 benchmarks/gpu_correctness.py fp8_nope512 ds_mla model1_p64 gluon > "$OUT/gpu_correctness_rest.log" 2>&1
echo "== gpu_correctness fp8 NoPE, ds_mla, model1 Gluon rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_rest.log"; grep "FAIL\|Error\|all ok" "$OUT/gpu_correctness_rest.log" | head -5
mkdir -p "$OUT/select"
timeout 60 python3 benchmarks/gluon_select.py "$OUT/select" --tokens 32 --formats auto --heads 128 > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select T=32 rc=$?"; grep "T=\|written\|Error" "$OUT/gluon_select.log" | cut -c50-250
# (the selection's table as the user's tables, over the package's: the package keeps its other entries)
bench_within 60 "$OUT/select" "bf16_nope 128 32" "bf16 128 32"
bench_within 300 "" "bf16 128 1,4,16,128,4096" "fp8 16 16,64,128,256" "bf16_nope 128 4,16,64,256" \
  "bf16_nope 64 1,4,16,64,128,256" "bf16 64 16,64,256"
pack_out
