#!/usr/bin/env bash
# Prepared in session 37 (no device that session): the narrow bf16 kernel's ready_parts (a tile's columns in parts, each
# on its own barrier, so M's S^T starts on the first parts while the rest land; compiled only, 0 spills on Triton 3.6
# and 3.9), alone and with two gathering warp groups (loaders=2). Any sm90 card, compared in one process: the Gluon
# correctness cases of the narrow bf16 kernel with 2 and with 4 parts, then benchmarks/calls/ready_parts.py (the
# shipped kernel against the variants on T=1, 4, 16 and 256 rows, rotating orders; a run cut off keeps its rows).
#   bash benchmarks/calls/h200_call_s37d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
for rp in 2 4; do
  timeout 120 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 narrow --with ready_parts=$rp \
    > "$OUT/correctness_rp$rp.log" 2>&1
  echo "== gpu_correctness narrow bf16 ready_parts=$rp rc=$?"; grep -c " ok$" "$OUT/correctness_rp$rp.log"
  grep "FAIL\|Error\|all ok" "$OUT/correctness_rp$rp.log" | head -5
done
timeout 300 python3 benchmarks/calls/ready_parts.py > "$OUT/ready_parts.log" 2>&1
echo "== ready_parts rc=$?"; grep "^|\|Error" "$OUT/ready_parts.log" | tail -12 | cut -c1-180
pack_out
