#!/usr/bin/env bash
# The next planned call (session 39): cluster_share_probe.py's multicast modes, the T=1 gather's rows loaded once from
# L2 for the CTAs of a cluster (any sm90 card), then on the H200 the suite's wide split-K rows against FlashInfer with
# bfloat16 partials (the H200's table still holds their float32-partial times): benchmarks/calls/h200_call_s39a.sh.
# Also prepared, the H200 only: h200_call_s37c.sh (the wide split counts at T=16 H=64).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s39a.sh"
