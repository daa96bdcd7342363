#!/usr/bin/env bash
# The next planned call (session 41): the shipped kernels at T=256 and 128, H=16, all six formats, on the suite's
# slot pool and on an L2-resident one: benchmarks/calls/h200_call_s41a.sh. It ran on an H100 in session 41's call 3;
# on the H200 it checks that card's floors (the fp8 rows' SM floor against issue 7's targets) on the card itself.
# (proto_fp8_raw.py's call, h200_call_s41b.sh, ran in calls 8-16; session 39's s39b's s37c, H200-only split counts,
# is still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s41a.sh"
