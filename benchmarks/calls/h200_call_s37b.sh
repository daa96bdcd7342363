#!/usr/bin/env bash
# Prepared in session 36 for the next device time (after h200_call_s36f.sh, which benches the wide split-K rows on the
# H200); any sm90 card, compared in one process. (1) gather_probe.py: does a T=1 tile of gathered rows land sooner
# with 8 or 16 gathering warps than with the narrow kernel's 4? (2) The narrow bf16 kernel with two gathering warp
# groups (num_warps=12, session 36: each gathers half of every tile's columns; compiled only): its cases in
# gpu_correctness.py, then t1_configs.py against the shipped configs at T=1 and 4 with 64 and 128 heads.
#   bash benchmarks/calls/h200_call_s37b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 120 python3 benchmarks/calls/gather_probe.py > "$OUT/gather_probe.log" 2>&1
echo "== gather_probe rc=$?"; grep "^|\|Error" "$OUT/gather_probe.log" | tail -9
timeout 90 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 narrow > "$OUT/correctness_narrow_bf16.log" 2>&1
echo "== gpu_correctness auto576 auto_nope512 narrow rc=$?"; grep -c " ok$" "$OUT/correctness_narrow_bf16.log"
grep "FAIL\|Error\|all ok" "$OUT/correctness_narrow_bf16.log" | head
timeout 300 python3 benchmarks/calls/t1_configs.py --formats bf16,bf16_nope --tokens 1,4 --heads 128,64 \
  --candidates 16:16:2,16:16:2:12,16:32:1,16:8:2:12,32:16:2:12 > "$OUT/two_gatherers.log" 2>&1
echo "== t1_configs (two gathering warp groups) rc=$?"; grep "^|\|Error" "$OUT/two_gatherers.log" | tail -30 | cut -c1-150
pack_out
