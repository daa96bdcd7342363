#!/usr/bin/env bash
# Prepared in session 37 (no machine could be started for it then): benchmarks/calls/cluster_share_probe.py, the T=1
# gather shared by the 8 head blocks of a split through thread-block clusters of 1, 2, 4 and 8 CTAs (CUDA C++, built
# on the machine by load_inline with nvcc for sm_90a). Any sm90 card: does sharing the rows land two tiles sooner than
# the ~6.7K cycles of every program gathering them all (gather_probe.py on an H100)? If the card is the H200, the
# suite's wide split-K rows are benched after it (h200_call_s36f.sh).
#   bash benchmarks/calls/h200_call_s37e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
mkdir -p "$OUT/probe"
timeout 300 python3 benchmarks/calls/cluster_share_probe.py > "$OUT/probe/cluster_share_probe.log" 2>&1
echo "== cluster_share_probe rc=$?"; grep "^|\|Error" "$OUT/probe/cluster_share_probe.log" | tail -8
[[ "$gpu" == *H200* ]] && exec bash benchmarks/calls/h200_call_s36f.sh 300
. benchmarks/h200_steps.sh
pack_out
