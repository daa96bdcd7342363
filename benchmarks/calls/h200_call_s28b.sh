#!/usr/bin/env bash
# Session 28, call 2: the register-operand prototype with slot ids two tiles ahead and the next tile's rows
# prefetched into L2 (call 1: correct, but 226.6 us against the shipped kernel's 135.0), and compile_gpu.py
# again (call 1: reduce-overhead still failed with split-K; a captured call's own buffer is now dropped after it).
#   bash benchmarks/calls/h200_call_s28b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 150 python3 benchmarks/calls/proto_regs_a.py > "$OUT/proto_regs_a.log" 2>&1
echo "== proto_regs_a rc=$?"; grep "trial\|^|\|correctness\|Error" "$OUT/proto_regs_a.log" | cut -c1-160
timeout 170 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|correctness\|ERROR\|Error" "$OUT/compile_gpu.log" | cut -c1-160
pack_out
