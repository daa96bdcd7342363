#!/usr/bin/env bash
# Ran in session 39 (calls 3-4, an H100; its H200 part did not run). Session 39's call 2 (gather_probe.py with 128
# down to 16 programs, an H100) found the T=1 gather bound by the L2 as a whole: a program's two tiles land in 6.9K
# cycles with 128 programs, 2.7K with 16. So one L2 read for the 8 head blocks of a split could pay:
# cluster_share_probe.py's multicast modes (new) load each CTA's share of the rows by bulk copies from global memory
# multicast to every CTA of its cluster (cp.async.bulk...multicast::cluster; 128 bytes a copy into the stage layout,
# or whole 1152-byte rows), against the cp.async gather (share, cluster 1). Any sm90 card. Then, on the H200 only,
# h200_call_s36f.sh's wide split-K rows (LIMIT_S, default 330).
#   bash benchmarks/calls/h200_call_s39a.sh [LIMIT_S]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 180 python3 benchmarks/calls/cluster_share_probe.py > "$OUT/multicast_probe.log" 2>&1
echo "== cluster_share_probe rc=$?"; grep "^| [a-z]\|Error\|error" "$OUT/multicast_probe.log" | tail -14
if [[ "$gpu" == *H200* ]]; then
  check_tables
  bench_within "${1:-330}" "" "bf16 64,128 4,16" "bf16_nope 64,128 4,16" "fp8 32,64,128 1,4,16" \
    "fp8_nope 32,64,128 1,4,16" "model1 32,64,128 1,4,16" "fp8_ds_mla 32,64,128 1,4,16" "fp8_nope 32 64"
fi
pack_out
