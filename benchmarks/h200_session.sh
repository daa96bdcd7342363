#!/usr/bin/env bash
# Session 13's third device call on the H200, for issue 7: the fp8 Gluon kernel with tile j+1
# prefetched into L2 by the dequantizing warp group (compile-checked, not yet run).
#  1. GPU correctness of the Gluon kernel in the fp8 formats;
#  2. its table entries (H=128 and H=16, chosen in call 2 without the prefetch) re-timed
#     (gluon_select.py --remeasure; compare with benchmarks/results/session13/call2);
#  3. gluon_select.py for the fp8 formats' 32- and 64-head specs.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 120 python3 benchmarks/gpu_correctness.py fp8_576 fp8_nope512 ds_mla model1_p64 gluon > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error" "$OUT/gpu_correctness.log" | head -8 | cut -c1-200; tail -1 "$OUT/gpu_correctness.log" | cut -c1-300
select_fmt() {  # LIMIT_S NAME ARGS...: gluon_select.py ARGS into $OUT/tuned, log NAME
  local limit=$1 name=$2; shift 2
  timeout "$limit" python3 benchmarks/gluon_select.py "$OUT/tuned" "$@" > "$OUT/gluon_select_$name.log" 2>&1
  echo "== gluon_select $name rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_$name.log" \
    | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//' | cut -c1-150
}
select_fmt 150 remeasure --remeasure --formats fp8_e4m3,fp8_ds_mla,model1
select_fmt 270 h32_64 --heads 32,64 --formats fp8_ds_mla,model1,fp8_e4m3
pack_out
