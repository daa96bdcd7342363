#!/usr/bin/env bash
# Session 12, issue 7: the Gluon sm90 bf16 prototypes (gluon_kernel.py, at commit 2759a93): GPU
# correctness of each variant, then its times beside the shipped Triton kernel and FlashInfer.
#   bash benchmarks/calls/h200_call_gluon.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout ${1:-420} python3 benchmarks/calls/proto_gluon.py > "$OUT/proto_gluon.out" 2>&1
echo "== proto_gluon rc=$?"; grep -v "^check\|^T=\|flashinfer.jit" "$OUT/proto_gluon.out" | tail -30; grep -c " ok$" "$OUT/proto_gluon.out"; grep "FAIL\|ERROR" "$OUT/proto_gluon.out" | head -8 | cut -c1-300
pack_out
