#!/usr/bin/env bash
# Session 12, issue 7: bf16 GPU correctness including the Gluon kernel (Config.gluon), then
# benchmarks/gluon_select.py: the Gluon kernel against every shipped bf16 H >= 64 entry, winners
# written to $OUT/tuned (merge with benchmarks/merge_tuned.py).
#   bash benchmarks/calls/h200_call_gluon_select.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 200 python3 benchmarks/gpu_correctness.py > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error\|error:" "$OUT/gpu_correctness.log" | head -5; grep " gl " "$OUT/gpu_correctness.log"; tail -1 "$OUT/gpu_correctness.log"
timeout 330 python3 benchmarks/gluon_select.py "$OUT/tuned" > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select rc=$?"; cut -c1-250 "$OUT/gluon_select.log" | grep -v "^\[\|Warning\|warn" | tail -20
pack_out
