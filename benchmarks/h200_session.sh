#!/usr/bin/env bash
# The next planned call (prepared in session 37): benchmarks/calls/h200_call_s37e.sh, on any sm90 card, times the T=1
# gather shared through thread-block clusters (cluster_share_probe.py); on the H200 it goes on with
# h200_call_s36f.sh, the suite's rows whose H200 entries run the wide Gluon kernel with split-K, benched against
# FlashInfer with bfloat16 partials (every call of sessions 36 and 37 got an H100, so the H200's table still holds
# their float32-partial times). After it, on the H200 only: benchmarks/calls/h200_call_s37c.sh (the wide split counts at
# T=16 H=64). (h200_call_s37b.sh and s37d.sh's candidates were measured on an H100 in session 37 and removed.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s37e.sh"
