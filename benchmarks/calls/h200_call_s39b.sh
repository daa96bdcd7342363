#!/usr/bin/env bash
# Prepared in session 39. Any sm90 card: smem_contention_probe.py, an S^T chain of 36 wgmmas (the narrow kernel's,
# m64n16k16 from a 128-byte-swizzled stage) timed alone, beside other warp groups' shared-memory stores (at full rate
# and paced), beside loads and stores, and beside a second chain: is shared memory's bandwidth what stretches fp8
# T=256 H=16's S^T to ~2800 cycles a tile (model1's: ~840)? Then, on the H200 only, h200_call_s37c.sh's steps
# (gluon_select.py at bf16 and bf16 NoPE T=16 H=64, then those rows benched).
#   bash benchmarks/calls/h200_call_s39b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
timeout 120 python3 benchmarks/calls/smem_contention_probe.py > "$OUT/smem_contention.log" 2>&1
echo "== smem_contention_probe rc=$?"; grep "^| [a-z]\|Error\|error" "$OUT/smem_contention.log" | tail -10
# (h200_call_s37c.sh packs $OUT, the probe's log with its own)
[[ "$gpu" == *H200* ]] && exec bash benchmarks/calls/h200_call_s37c.sh
pack_out
