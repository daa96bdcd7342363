#!/usr/bin/env bash
# The next planned call (session 41): the shipped kernels at T=256 and 128, H=16, all six formats, on the suite's
# slot pool and on an L2-resident one: benchmarks/calls/h200_call_s41a.sh. (Session 40's s40a, proto_fp8_mma.py,
# ran in session 41's calls 1-2; session 39's s39b's s37c, H200-only split counts, is still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s41a.sh"
