#!/usr/bin/env bash
# Session 16's first device call on the H200, for issue 7: correctness with the combine kernel launched
# as a programmatic dependent (PDL); where small-T calls spend their time (small_t_diag.py); session 12's
# untested 32-row-tile candidate with S(j+1) overlapping the softmax (proto_gluon.py, gluon_n32.py);
# the narrow kernel with one split for bf16 and bf16 NoPE at T=128 H=16.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 120 python3 benchmarks/gpu_correctness.py auto576 ds_mla > "$OUT/gpu_correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok" "$OUT/gpu_correctness.log"; grep -i "fail\|error" "$OUT/gpu_correctness.log" | head
timeout 120 python3 benchmarks/calls/small_t_diag.py > "$OUT/small_t_diag.log" 2>&1
echo "== small_t_diag rc=$?"; grep "^|\|nop" "$OUT/small_t_diag.log" | sort -u
timeout 150 python3 benchmarks/calls/proto_gluon.py > "$OUT/proto_gluon.log" 2>&1
echo "== proto_gluon rc=$?"; grep "correctness\|FAIL\|ERROR\|^|" "$OUT/proto_gluon.log"
mkdir -p "$OUT/select"
timeout 100 python3 benchmarks/gluon_select.py "$OUT/select" --narrow --formats auto --heads 16 --tokens 128 \
  > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select rc=$?"; tail -8 "$OUT/gluon_select.log"
pack_out
