#!/usr/bin/env bash
# Session 24, call 3 (issue 7): the wide Gluon kernel with a bf16 cache as a persistent kernel
# (GluonKernel.persistent, runtime/triton_backend._persistent, off unless forced): its correctness against the
# float64 reference (more units than SMs; units of 0 and 1 tiles; sinks, LSE, unaligned q), then shipped against
# persistent on the suite rows whose units outnumber the SMs (benchmarks/calls/persistent.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 480 python3 benchmarks/calls/persistent.py > "$OUT/persistent.log" 2>&1
echo "== persistent rc=$?"; grep "^d_qk\|correctness:\|Error\|error:" "$OUT/persistent.log" | head -40
sed -n '/^| format/,$p' "$OUT/persistent.log"
pack_out
