#!/usr/bin/env bash
# Session 45, a development call (any card), with benchmarks/results/session45/model1_raw_groups.patch applied: the
# raw-row kernel for model1 (the template's m1 path: S^T and O^T per 64-dim group, nothing dequantized), correct against
# the reference with poisoned slots (gpu_correctness.py's model1 narrow cases; the 16-head one-split ones run raw),
# then timed against the dequantizing kernel with the same config in one process (raw_rows.py).
#   bash benchmarks/calls/h200_call_s45a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 benchmarks/gpu_correctness.py model1_p64 narrow > "$OUT/correctness.log" 2>&1
echo "== correctness rc=$?"; grep -c " ok$" "$OUT/correctness.log"; grep -v " ok$" "$OUT/correctness.log" | tail -20
raw_rows raw_rows 300 --formats model1 --tokens 128,256
pack_out
