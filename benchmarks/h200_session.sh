#!/usr/bin/env bash
# The next planned call (h200_call_s48c.sh, ~4-6 min): the raw kernel without its L2 prefetch (session 48's default)
# against it, the suite's raw rows benched on the H200 (T=256 then T=128, 16 heads), and the dequantizing kernels'
# group C without its prefetch. (Session 41's s41a, the shipped kernels' floors, and session 39's s39b's s37c,
# H200-only split counts, are still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s48c.sh"
