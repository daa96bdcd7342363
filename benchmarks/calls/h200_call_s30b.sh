#!/usr/bin/env bash
# Prepared in session 30 (no machine lent): GluonKernel.pdl_wait (SPARSEMLA_PDL_WAIT=1; compile-checked only), the
# Gluon attention kernel launched as a programmatic dependent of the stream's previous kernel, waiting for it before it
# touches memory, so its launch overlaps that kernel's end (the combine's PDL saved 0.4-0.9 us at T=1, session 16);
# with SPARSEMLA_COMBINE_TRIGGER=1 the combine also lets the next kernel start once its own programs have.
# Aimed at issue 7's bf16 T=1 H=128 row (9.0 us, target 8).
#  1. gpu_correctness.py's Gluon cases with both on, bf16 with rope (the wide, narrow, one-stage, FUSED and
#     empty-split kernels; the wait is the same first instruction in every format).
#  2. benchmarks/calls/pdl_wait.py: chains of calls whose q a torch kernel writes from the previous output right before
#     each call, eager and in a CUDA graph, plain / wait / wait+trigger: all bitwise equal; then the small-T rows timed
#     for the three in rotated orders.
#  3. If a variant is faster and 1-2 pass: the suite's bench of the small-T rows with it, against FlashInfer in the
#     same process (the next call), it becomes the default and the rows are merged into ../results/NVIDIA_H200.md.
#   bash benchmarks/calls/h200_call_s30b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
SPARSEMLA_PDL_WAIT=1 SPARSEMLA_COMBINE_TRIGGER=1 timeout 150 python3 benchmarks/gpu_correctness.py gluon auto576 \
  > "$OUT/gpu_correctness_pdl_wait.log" 2>&1
echo "== gpu_correctness gluon, SPARSEMLA_PDL_WAIT=1 SPARSEMLA_COMBINE_TRIGGER=1 rc=$?"
grep -c " ok$" "$OUT/gpu_correctness_pdl_wait.log"; grep "FAIL\|Error" "$OUT/gpu_correctness_pdl_wait.log" | head
tail -1 "$OUT/gpu_correctness_pdl_wait.log"
timeout 380 python3 benchmarks/calls/pdl_wait.py > "$OUT/pdl_wait.log" 2>&1
echo "== pdl_wait rc=$?"; grep "hazards\|FAIL\|Error" "$OUT/pdl_wait.log" | head; grep "^| " "$OUT/pdl_wait.log" | sort -u
pack_out
