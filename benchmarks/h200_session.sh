#!/usr/bin/env bash
# The next planned call, for the H200: the raw kernel's L2 prefetch distance A/B and the fp8 T=256 H=16 row benched
# again (h200_call_s48a.sh; ~3-4 min). (Session 41's s41a, the shipped kernels' floors, and session 39's s39b's
# s37c, H200-only split counts, are still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s48a.sh"
