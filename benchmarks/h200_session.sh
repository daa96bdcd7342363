#!/usr/bin/env bash
# Session 14's second device call on the H200, for issue 7: where the narrow Gluon kernel's time goes,
# and its selection for the formats call 1 did not reach.
#  1. benchmarks/calls/narrow_diag.py: H=16 T=256, the kernel without its wgmmas, and on L2-resident rows;
#  2. GPU correctness of the narrow kernel for fp8_ds_mla and model1 (call 1 was cut off there);
#  3. gluon_select.py --narrow for fp8_e4m3 (576) and model1 at H=16 and 32, T=64..256.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 150 python3 benchmarks/calls/narrow_diag.py > "$OUT/narrow_diag.log" 2>&1
echo "== narrow_diag rc=$?"; grep "^|\|Error" "$OUT/narrow_diag.log" | cut -c1-150
timeout 100 python3 benchmarks/gpu_correctness.py ds_mla model1_p64 narrow > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error" "$OUT/gpu_correctness.log" | head -8 | cut -c1-200; tail -1 "$OUT/gpu_correctness.log" | cut -c1-300
timeout 230 python3 benchmarks/gluon_select.py "$OUT/tuned" --narrow --heads 16,32 --tokens 256,128,64 \
  --formats fp8_e4m3-qk576,model1 > "$OUT/gluon_select_narrow.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_narrow.log" \
  | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//; s/ n64//g' | cut -c1-220
pack_out
