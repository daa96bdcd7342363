#!/usr/bin/env bash
# Session 59's call: on an H200, issue 7's prepared steps first (h200_call_s49a.sh), then max_logits as committed;
# on another card, max_logits as committed (the Gluon kernels' by red after the output, the raw fp8 kernel's by a
# store) against a base revision's (BASE_TAR: `git archive REV templates gen runtime tuned` as a tar, here a306115,
# where the Gluon kernels used atom and the raw kernel stepped aside), each installed afresh (build/ removed: a tar's
# older mtimes would leave setuptools' build/lib copies in place), in that order, logs under $OUT/new and $OUT/base.
#   BASE_TAR=.whl/base.tar bash benchmarks/calls/s59_call.sh   (after: source .whl/prelude.sh)
set -u
export PYTHONUNBUFFERED=1
install() {
  rm -rf build && python3 -m pip install -q --no-deps --no-build-isolation --no-index . 2>&1 | grep -v WARN | tail -3
}
ml() {  # $1: the log folder under $OUT, $2: the time limit, s
  mkdir -p "$OUT/$1"
  timeout "$2" python3 /tmp/max_logits_fused_gpu.py --out "$OUT/$1" > "$OUT/$1/log" 2>&1
  echo "== max_logits $1 rc=$?"; grep "^|\|not ok" "$OUT/$1/log" | cut -c1-110 | tail -16
}
cp benchmarks/calls/max_logits_fused_gpu.py /tmp/  # (the committed script for both)
install
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$card"
if [[ "$card" == *H200* ]]; then
  timeout 400 bash benchmarks/calls/h200_call_s49a.sh 2>&1 | tail -40
  ml new 110
else
  ml new 200
  tar xf "$BASE_TAR" && install
  ml base 200
fi
