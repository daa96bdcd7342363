#!/usr/bin/env bash
# Prepared in session 30 (no machine lent): GluonKernel.pdl_wait (SPARSEMLA_PDL_WAIT=1; compile-checked only), the
# Gluon attention kernel launched as a programmatic dependent of the stream's previous kernel, waiting for it before it
# touches memory, so its launch overlaps that kernel's end (the combine's PDL saved 0.4-0.9 us at T=1, session 16);
# with SPARSEMLA_COMBINE_TRIGGER=1 the combine also lets the next kernel start once its own programs have.
# Aimed at issue 7's bf16 T=1 H=128 row (9.0 us, target 8).
#  1. benchmarks/calls/pdl_wait.py: chains of calls whose q a torch kernel writes from the previous output right before
#     each call, eager and in a CUDA graph, plain / wait / wait+trigger: all bitwise equal; then the small-T rows timed
#     for the three in rotated orders, each variant checked against the reference first.
#  2. The suite's bench of bf16 T=1 at H=64 and 128 with both on, against FlashInfer in the same process: if a variant
#     gains and 1 passes, it becomes the default and the rows are merged into ../results/NVIDIA_H200.md.
#   bash benchmarks/calls/h200_call_s30b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 330 python3 benchmarks/calls/pdl_wait.py > "$OUT/pdl_wait.log" 2>&1
echo "== pdl_wait rc=$?"; grep "hazards\|FAIL\|Error" "$OUT/pdl_wait.log" | head; grep "^| " "$OUT/pdl_wait.log" | sort -u
SPARSEMLA_PDL_WAIT=1 SPARSEMLA_COMBINE_TRIGGER=1 timeout 150 python3 -m sparsemla.cli bench --no-prefill --formats bf16 \
  --tokens 1 --heads 64,128 --out "$OUT/bench_pdl" > "$OUT/bench_pdl.log" 2>&1
echo "== bench SPARSEMLA_PDL_WAIT=1 SPARSEMLA_COMBINE_TRIGGER=1 rc=$?"; grep "^| " "$OUT/bench_pdl.log" | sort -u | cut -c1-110
pack_out
