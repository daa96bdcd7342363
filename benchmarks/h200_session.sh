#!/usr/bin/env bash
# The next planned call (h200_call_s49a.sh, ~3-6 min, the H200 only): session 48's s48c reordered, issue 7's rows
# first: the raw rows benched at T=256 H=16 (the raw kernel without its L2 prefetch, session 48's default), that
# kernel against the prefetch, the T=128 rows, then the dequantizing kernels' group C with and without its prefetch.
# (Session 41's s41a, the shipped kernels' floors, and session 39's s39b's s37c, H200-only split counts, are still
# prepared.) Afterwards: where step 2 shows the H200 faster without the raw kernel's prefetch, as the H100 was,
# apply benchmarks/results/session51/drop_raw_prefetch.patch (its H200_NUMBERS placeholder filled in).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
# First, on any card: session 58's max_logits written by the attention kernel (sparse_mla(return_max_logits=True))
# checked against fp64 and timed against the call without it (benchmarks/calls/max_logits_fused_gpu.py; json in $OUT).
set -u
here="$(dirname "$0")"
timeout 330 python3 "$here/calls/max_logits_fused_gpu.py" > "$OUT/max_logits_fused.log" 2>&1
echo "== max_logits_fused_gpu rc=$?"; grep "^|\|not ok\|Error" "$OUT/max_logits_fused.log" | cut -c1-200 | tail -14
bash "$here/calls/h200_call_s49a.sh"
