#!/usr/bin/env bash
# Session 12, issue 7, after the Gluon template took FlashInfer's division of the work: bf16 GPU
# correctness (Config.gluon included), benchmarks/gluon_select.py against the shipped table
# (winners into $OUT/tuned), then the bf16 H=128 and H=64 rows of `sparsemla bench` through that
# table (a user table takes precedence over the package's).
#   bash benchmarks/calls/h200_call_gluon_final.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 150 python3 benchmarks/gpu_correctness.py > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -c " ok$" "$OUT/gpu_correctness.log"; grep "FAIL\|Error\|error:" "$OUT/gpu_correctness.log" | head -5; grep " gl " "$OUT/gpu_correctness.log"; tail -1 "$OUT/gpu_correctness.log"
timeout 200 python3 benchmarks/gluon_select.py "$OUT/tuned" > "$OUT/gluon_select.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries" "$OUT/gluon_select.log" | sed 's/sparse_mla-sm90-auto-qk576-v512-//; s/-k2048-p1-qbf16-cbf16//' | cut -c1-200
bench_within 200 "$OUT/tuned" "bf16 128 1,4,16,32,64,128,256,4096" "bf16 64 1,4,16,64,128,256,4096"
pack_out
