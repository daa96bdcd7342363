#!/usr/bin/env bash
# Session 22, call 4: the rest of the correctness regression that call 3 cut off at its time limit (model1's Gluon
# cases from the 16-head ones on), then the Triton kernel's cases of gpu_correctness.py in every format (the
# H200 table still picks the Triton kernel in a few small-T buckets).
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
correct correct_gluon_model1 150 model1_p64 gluon
correct correct_triton 300 triton
pack_out
