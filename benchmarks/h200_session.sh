#!/usr/bin/env bash
# The next planned call (session 41), for the H200 (both scripts run on any sm90 card; on an H100 they repeat session
# 41's calls 3 and 18): proto_fp8_raw.py, the raw-row e4m3 kernel, beside the shipped kernel at T=256 H=16, fp8 and
# fp8_nope (h200_call_s41b.sh, ~60 s), then the shipped kernels' floors at T=256 and 128, H=16, all six formats, on the
# suite's slot pool and an L2-resident one (h200_call_s41a.sh, ~35 s). (Session 39's s39b's s37c, H200-only split
# counts, is still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s41b.sh"
bash "$here/calls/h200_call_s41a.sh"
