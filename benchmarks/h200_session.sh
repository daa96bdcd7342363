#!/usr/bin/env bash
# Session 13's second device call on the H200, for issue 7: the Gluon kernel for the fp8 formats
# (its GPU correctness passed in call 1) against the shipped Triton entries.
#  1. benchmarks/gluon_select.py for the fp8 formats' 128- and 16-head specs (the issue's rows:
#     T=128 H=128 and T=256 H=16), winners into $OUT/tuned (merge with benchmarks/merge_tuned.py);
#  2. the fp8 bench rows with those winners over the shipped table, beside FlashInfer.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
select_fmt() {  # LIMIT_S FORMATS: gluon_select.py for those formats' 128- and 16-head specs
  timeout "$1" python3 benchmarks/gluon_select.py "$OUT/tuned" --heads 128,16 --formats "$2" > "$OUT/gluon_select_$2.log" 2>&1
  echo "== gluon_select $2 rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_$2.log" \
    | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//' | cut -c1-150
}
select_fmt 200 fp8_ds_mla,model1
select_fmt 170 fp8_e4m3
bench_within 180 "$OUT/tuned" "fp8_ds_mla 128 128" "model1 128 128" "fp8 128 128" "fp8 16 256" "fp8_ds_mla 16 256"
pack_out
