#!/usr/bin/env bash
# Session 22, call 3: correctness of split grids whose splits are mostly empty (call 2 found fp8_ds_mla's
# 16-head one-stage case with 32 splits wrong with SPREAD, since removed): gpu_correctness.py's `empty` cases
# through the combine kernel, every format, then fp8_ds_mla's twice more (fresh random inputs each run); then
# the whole Gluon set of gpu_correctness.py as a regression check of the shipped template.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
correct() {  # NAME LIMIT_S ARGS...: one gpu_correctness.py run into $OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  timeout "$limit" python3 benchmarks/gpu_correctness.py "$@" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$?"; grep -c " ok$" "$OUT/$name.log"; grep "FAIL\|Error\|error:" "$OUT/$name.log" | head -8
}
correct correct_empty 150 gluon empty
correct correct_empty_ds_mla_2 60 ds_mla gluon empty
correct correct_empty_ds_mla_3 60 ds_mla gluon empty
correct correct_gluon 280 gluon
pack_out
