#!/usr/bin/env bash
# The next planned call, for the H200: the raw-row kernel's rows (h200_call_s45b.sh: the suite's fp8, fp8_nope and
# fp8_ds_mla T=256 then T=128 rows with 16 heads benched against FlashInfer, then raw_rows.py, raw against the
# dequantizing kernel; the H200 only, ~5-8 min). Prepared in session 43 as h200_call_s43d.sh (the same steps, T=128
# first); sessions 43-45 got no H200 to run it. (Session 41's s41a, the shipped kernels' floors, and session 39's
# s39b's s37c, H200-only split counts, are still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s45b.sh"
