#!/usr/bin/env bash
# Session 13's first device call on the H200, for issue 7: the Gluon kernel for the fp8 formats
# (templates/sparse_mla_gluon.py.jinja with its dequantizing warp group; compile-checked, never run).
#  1. GPU correctness of the Gluon kernel in every format (128, 32 and 16 heads; split-K, sink, LSE);
#  2. benchmarks/gluon_select.py for the fp8 formats' 128- and 16-head specs (the issue's rows:
#     T=128 H=128 and T=256 H=16), winners into $OUT/tuned (merge with benchmarks/merge_tuned.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 170 python3 benchmarks/gpu_correctness.py gluon > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error" "$OUT/gpu_correctness.log" | head -8 | cut -c1-200; tail -3 "$OUT/gpu_correctness.log" | cut -c1-300
timeout 330 python3 benchmarks/gluon_select.py "$OUT/tuned" --heads 128,16 --formats fp8_e4m3,fp8_ds_mla,model1 > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select.log" | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//' | cut -c1-170
pack_out
