#!/usr/bin/env bash
# The next planned call (session 42), for the H200 (both scripts run on any sm90 card; on an H100 they repeat session
# 42's call 9 and session 41's call 3): proto_fp8_rega.py, the raw-row e4m3 kernel with V^T as P.V's A from registers,
# as it is and with the one-barrier max (ONE_BAR 1), beside proto_fp8_raw.py and the shipped kernel at T=256 H=16, fp8
# and fp8_nope, on the suite's slot pool and an L2-resident one (h200_call_s42a.sh, ~60 s), then the shipped kernels'
# floors at T=256 and 128, H=16, all six formats (h200_call_s41a.sh, ~35 s). (Session 39's s39b's s37c, H200-only
# split counts, is still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s42a.sh"
bash "$here/calls/h200_call_s41a.sh"
