#!/usr/bin/env bash
# Session 30, fourth call (the machine was an H100): after s30a (tail split 1.017-1.020x on three bf16 rows, NoPE
# 0.990 with outliers) and s30b (pdl_wait: wait alone 0.1-0.26 us faster in every small-T row; wait+trigger mixed):
#  1. gpu_correctness.py's Gluon cases with SPARSEMLA_PDL_WAIT=1 in bf16 and fp8_e4m3 with rope (the wait's correctness
#     over every Gluon kernel kind, before it becomes the default).
#  2. tail_split.py again on the NoPE and bf16 H=128 prefill rows (ABBA, six repetitions), without its checks.
#  3. torch.compile (benchmarks/calls/compile_gpu.py, session 29's three modes).
#   bash benchmarks/calls/h200_call_s30c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
SPARSEMLA_PDL_WAIT=1 timeout 200 python3 benchmarks/gpu_correctness.py gluon auto576 fp8_576 > "$OUT/gpu_correctness_pdl_wait.log" 2>&1
echo "== gpu_correctness gluon, SPARSEMLA_PDL_WAIT=1 rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_pdl_wait.log"
grep "FAIL\|Error" "$OUT/gpu_correctness_pdl_wait.log" | head; tail -1 "$OUT/gpu_correctness_pdl_wait.log"
timeout 160 python3 benchmarks/calls/tail_split.py --no-check --rows bf16_nope:4096:128,bf16:4096:128 > "$OUT/tail_split2.log" 2>&1
echo "== tail_split rc=$?"; grep "^| " "$OUT/tail_split2.log" | sort -u
timeout 180 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|ERROR\|correctness" "$OUT/compile_gpu.log" | cut -c1-200
pack_out
