#!/usr/bin/env bash
# The next device call on the H200 (planned at the end of session 12): session 13's first candidate
# for issue 7, benchmarks/calls/gluon_n32.py (the shipped Gluon kernel with 32-row tiles in 4 stages
# and S(j+1) issued before the softmax of tile j; compile-checked, never run yet), checked against the
# fp32 reference and timed beside the shipped kernel and FlashInfer (benchmarks/calls/proto_gluon.py),
# then the bf16 bench rows session 12 could not re-measure with its final template.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 200 python3 benchmarks/calls/proto_gluon.py > "$OUT/proto_gluon.out" 2>&1
echo "== proto_gluon rc=$?"; grep -v "^check\|^T=\|flashinfer.jit" "$OUT/proto_gluon.out" | tail -14; grep "FAIL\|ERROR" "$OUT/proto_gluon.out" | head -6 | cut -c1-300
bench_within 300 "" "bf16 128 1,4,16,32,64,256,4096" "bf16 64 4,16,64,128,256,4096"
pack_out
