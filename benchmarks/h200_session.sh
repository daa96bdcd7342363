#!/usr/bin/env bash
# Session 17 call 3: the wide Gluon kernel's pv2 variant (bf16, num_warps 12: S and the softmax in one
# warp group, two output groups that gather their half of each tile). GPU correctness of its cases,
# its two Q placements at three rows, then put against the shipped bf16 entries at 128 and 64 heads
# (gluon_select --pv2) and the bf16 rows benched with the winners overlaid on the installed table.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 70 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 pv2 > "$OUT/gpu_correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep -i "fail\|error\|Trace" "$OUT/gpu_correctness.log" | head
timeout 70 python3 benchmarks/calls/q_by_compute.py --pv2 > "$OUT/pv2_q.log" 2>&1
echo "== pv2 Q placement rc=$?"; grep "^| " "$OUT/pv2_q.log" | sort -u
mkdir -p "$OUT/select"
for args in "auto-qk576 128 4,16,32,64,128,256,4096 170" "auto-qk576 64 16,64,128,256,4096 90" \
            "auto-qk512 128 16,64,128,256,4096 80"; do
  set -- $args
  timeout $4 python3 benchmarks/gluon_select.py "$OUT/select" --pv2 --formats $1 --heads $2 --tokens $3 \
    >> "$OUT/gluon_select.log" 2>&1
  echo "== gluon_select $1 H=$2 rc=$?"
done
grep "T=\|written\|winner" "$OUT/gluon_select.log" | cut -c1-300
bench_within 110 "$OUT/select" "bf16 128 32,128,4096,16,64,256" "bf16 64 128,4096"
pack_out
