#!/usr/bin/env bash
# The next planned call: the L2 prefetches' A/Bs on the H200 (h200_call_s48b.sh: the raw kernel without its prefetch,
# then the dequantizing kernels' group C without its; ~3-5 min). (Session 41's s41a, the shipped kernels' floors, and
# session 39's s39b's s37c, H200-only split counts, are still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s48b.sh"
