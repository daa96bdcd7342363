#!/usr/bin/env bash
# Session 12, last call: the Gluon template with the output split 384/128 between the warp groups and
# the mask's slot ids loaded a tile early (call 8's profile). bf16 GPU correctness of the bf16 576 cache
# first (Triton and Gluon kernels; nothing else runs if it fails), then the table's Gluon entries re-timed
# with it (benchmarks/gluon_select.py --remeasure, into $OUT/tuned), then the T=128 H=128 bench row.
#   bash benchmarks/calls/h200_call_gluon_last.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 70 python3 benchmarks/gpu_correctness.py auto576 > "$OUT/gpu_correctness.log" 2>&1
rc=$?
echo "== gpu_correctness rc=$rc"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error\|error:" "$OUT/gpu_correctness.log" | head -5; grep " gl " "$OUT/gpu_correctness.log"; tail -1 "$OUT/gpu_correctness.log"
if [ $rc -eq 0 ]; then
  timeout 60 python3 benchmarks/gluon_select.py "$OUT/tuned" --remeasure > "$OUT/gluon_select.log" 2>&1
  echo "== gluon_select rc=$?"; grep "^sparse\|entries" "$OUT/gluon_select.log" | sed 's/sparse_mla-sm90-auto-qk576-v512-//; s/-k2048-p1-qbf16-cbf16//' | cut -c1-150
  bench_within 40 "$OUT/tuned" "bf16 128 128"
fi
pack_out
