#!/usr/bin/env bash
# Session 28, call 4: the register-operand prototype with the tile staged by cp.async (2 or 3 stages, the fp8 bytes in
# shared memory, no registers holding loads in flight) against its direct-load form and the shipped kernel.
#   bash benchmarks/calls/h200_call_s28c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/proto_regs_a.py > "$OUT/proto_regs_a.log" 2>&1
echo "== proto_regs_a rc=$?"; grep "trial\|^|\|correctness\|Error" "$OUT/proto_regs_a.log" | cut -c1-160
pack_out
