#!/usr/bin/env bash
# Prepared in session 29: the third call (after h200_session.sh and s29b).
#  1. gpu_correctness.py's s_ahead cases (bf16 with rope, fp8_e4m3 and model1: four tiles a program, one, none in
#     most splits, two loading groups, 32 heads, three stages; sinks of +/-inf, LSE, lengths, an all-invalid row).
#  2. The suite's bench (ours against FlashInfer in the same process, the tuned entries) of the small-T rows whose
#     entries are narrow programs of two tiles, with SPARSEMLA_S_AHEAD off and on (runtime/triton_backend.s_ahead_for:
#     the next S before the softmax where a program's tiles are all filled up front). If on is faster where it
#     applies and the cases above are correct, it becomes the default and these rows are merged into
#     ../results/NVIDIA_H200.md (benchmarks/merge_bench.py); issue 7's bf16 T=1 H=128 row (9.0 us, target 8) is one.
#   bash benchmarks/calls/h200_call_s29c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/gpu_correctness.py s_ahead auto576 fp8_576 model1_p64 > "$OUT/gpu_correctness_s_ahead.log" 2>&1
echo "== gpu_correctness s_ahead rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_s_ahead.log"; grep "FAIL\|Error" "$OUT/gpu_correctness_s_ahead.log" | head; tail -1 "$OUT/gpu_correctness_s_ahead.log"
for sa in 0 1; do
  SPARSEMLA_S_AHEAD=$sa timeout 170 python3 -m sparsemla.cli bench --no-prefill --formats bf16,bf16_nope,fp8 \
    --tokens 1,4 --heads 64,128 --out "$OUT/bench_s_ahead$sa" > "$OUT/bench_s_ahead$sa.log" 2>&1
  echo "== bench SPARSEMLA_S_AHEAD=$sa rc=$?"; grep "^| " "$OUT/bench_s_ahead$sa.log" | sort -u | cut -c1-110
done
pack_out
