#!/usr/bin/env bash
# Session 28, call 2 (and 3): the register-operand prototype with slot ids two tiles ahead and the next tile's rows
# prefetched into L2 (call 1: correct, but 226.6 us against the shipped kernel's 135.0; call 2: 201.6), in bf16 and in fp16
# operands (one cvt per pair of e4m3 values: the kernel issues ~2K instructions a tile, half of them conversions),
# and compile_gpu.py
# again (calls 1-2: reduce-overhead still failed with split-K; CUDA-graph trees route every allocation of the
# warming thread into their pool, so the kept buffers are now allocated on a thread of their own).
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
