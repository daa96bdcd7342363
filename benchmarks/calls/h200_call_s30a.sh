#!/usr/bin/env bash
# Prepared in session 30 (no machine lent): the persistent kernel with its last round's units split
# (GluonKernel.tail_split, SPARSEMLA_TAIL_SPLIT=1; compile-checked only), aimed at issue 7's bf16 prefill row
# (T=4096 H=128: 0.998x FlashInfer; 62 rounds of units on 132 SMs, then 8 units while 124 SMs wait).
#  1. gpu_correctness.py's tail cases: T=1060 H=128 under the runtime's own rules (4 tail tokens, 4 splits each).
#  2. benchmarks/calls/tail_split.py: correctness with the persistent kernel forced (tails of 4-18 tokens, most splits
#     empty in one case), then the prefill rows and T=2048 H=128 timed off and on, ABBA.
#  3. The suite's bench of the bf16 and NoPE H=128 rows with the tail split on, against FlashInfer in the same process
#     (its T=256 rows are a control: no persistent kernel there). If 2 gains and 1-2 are correct, SPARSEMLA_TAIL_SPLIT
#     becomes on by default and the prefill rows are merged into ../results/NVIDIA_H200.md (benchmarks/merge_bench.py).
#   bash benchmarks/calls/h200_call_s30a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 100 python3 benchmarks/gpu_correctness.py tail auto576 > "$OUT/gpu_correctness_tail.log" 2>&1
echo "== gpu_correctness tail rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_tail.log"; grep "FAIL\|Error" "$OUT/gpu_correctness_tail.log" | head; tail -1 "$OUT/gpu_correctness_tail.log"
timeout 260 python3 benchmarks/calls/tail_split.py > "$OUT/tail_split.log" 2>&1
echo "== tail_split rc=$?"; grep "FAIL\|Error\|correctness:" "$OUT/tail_split.log" | head; grep "^| " "$OUT/tail_split.log" | sort -u
SPARSEMLA_TAIL_SPLIT=1 timeout 170 python3 -m sparsemla.cli bench --formats bf16,bf16_nope --tokens 256 --heads 128 \
  --out "$OUT/bench_tail" > "$OUT/bench_tail.log" 2>&1
echo "== bench SPARSEMLA_TAIL_SPLIT=1 rc=$?"; grep "^| " "$OUT/bench_tail.log" | sort -u | cut -c1-110
pack_out
