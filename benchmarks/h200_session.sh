#!/usr/bin/env bash
# The next planned call (h200_call_s49a.sh, ~3-6 min, the H200 only): session 48's s48c reordered, issue 7's rows
# first: the raw rows benched at T=256 H=16 (the raw kernel without its L2 prefetch, session 48's default), that
# kernel against the prefetch, the T=128 rows, then the dequantizing kernels' group C with and without its prefetch.
# (Session 41's s41a, the shipped kernels' floors, and session 39's s39b's s37c, H200-only split counts, are still
# prepared.) Afterwards: where step 2 shows the H200 faster without the raw kernel's prefetch, as the H100 was,
# apply benchmarks/results/session51/drop_raw_prefetch.patch (its H200_NUMBERS placeholder filled in).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
# Then, on any card (the s49a steps stop at once on another than the H200; this one runs on an H100 too): session 57's
# max_logits kernel (FlashMLA prefill's second result) checked against fp64 and timed against the PyTorch pass it
# replaced and the attention call, with a few tilings (benchmarks/calls/max_logits_gpu.py; its json into $OUT).
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s49a.sh"
timeout 240 python3 "$here/calls/max_logits_gpu.py" > "$OUT/max_logits.log" 2>&1
echo "== max_logits_gpu rc=$?"; grep "^|\|not ok\|Error" "$OUT/max_logits.log" | tail -9
