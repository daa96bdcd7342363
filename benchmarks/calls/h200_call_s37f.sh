#!/usr/bin/env bash
# Prepared in session 37 (no machine could be started for it then): is the T=1 gather bound by the L2's bandwidth over
# all SMs or by each SM's own intake? gather_probe.py with 128, 64, 32 and 16 programs (one an SM): if a program's two
# tiles land sooner when fewer SMs gather, the L2 as a whole is the bound, and TMA multicast (one L2 read for the 8 head
# blocks of a split; Gluon has it from Triton 3.9) could pay; if not, no sharing scheme can. Any sm90 card.
#   bash benchmarks/calls/h200_call_s37f.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
for p in 128 64 32 16; do
  timeout 60 python3 benchmarks/calls/gather_probe.py --programs $p --variants 4:2:8,4:1:8,4:2:1 --sets 48 \
    > "$OUT/gather_probe_p$p.log" 2>&1
  echo "== gather_probe --programs $p rc=$?"; grep "^| cp" "$OUT/gather_probe_p$p.log" | tail -3
done
pack_out
