#!/usr/bin/env bash
# The next planned call (prepared in session 36): the suite's rows whose H200 entries run the wide Gluon kernel with
# split-K, benched against FlashInfer on the H200 with bfloat16 partials (benchmarks/calls/h200_call_s36f.sh; every
# call of sessions 36 and 37 got an H100, so the H200's table still holds their float32-partial times). It stops at
# once on another card. After it, also on the H200 only: benchmarks/calls/h200_call_s37c.sh (the wide split counts at
# T=16 H=64). On any card: benchmarks/calls/h200_call_s37f.sh (gather_probe.py with 128 down to 16 programs: is the T=1
# gather bound by the L2 as a whole or by each SM?). (Session 37 ran and removed h200_call_s37b.sh's and s37d.sh's
# candidates and ran s37e's probe, on an H100.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s36f.sh"
