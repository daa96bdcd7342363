#!/usr/bin/env bash
# Prepared at the end of session 16, not yet run (the session's device time was spent): the one-stage
# narrow variant with d_qk 512 (fp8 NoPE, model1), whose S is now computed in two 256-deep halves
# (0 B spilled, was 56-176 B): GPU correctness of every one-stage case, then put against the shipped
# entries at 16 heads and benched with the winners overlaid on the installed table; then the
# q_by_compute candidate (Q loaded by the computing warp group) against the shipped Gluon entries.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 80 python3 benchmarks/gpu_correctness.py st1 > "$OUT/gpu_correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep -i "fail\|error\|Trace" "$OUT/gpu_correctness.log" | head
mkdir -p "$OUT/select"
timeout 170 python3 benchmarks/gluon_select.py "$OUT/select" --narrow --one-stage --heads 16 \
  --formats fp8_e4m3-qk512,model1 > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select rc=$?"; grep "T=\|written\|winner" "$OUT/gluon_select.log" | cut -c1-330
bench_within 120 "$OUT/select" "fp8_nope 16 4,16,64,128,256" "model1 16 4,16,64,128,256"
timeout 160 python3 benchmarks/calls/q_by_compute.py > "$OUT/q_by_compute.log" 2>&1
echo "== q_by_compute rc=$?"; grep "^| " "$OUT/q_by_compute.log" | sort -u
pack_out
