#!/usr/bin/env bash
# The next planned call (prepared in session 36): the suite's rows whose H200 entries run the wide Gluon kernel with
# split-K, benched against FlashInfer on the H200 with bfloat16 partials (benchmarks/calls/h200_call_s36f.sh; every
# call of session 36 got an H100, so the H200's table still holds their float32-partial times). It stops at once on
# another card. After it: benchmarks/calls/h200_call_s37b.sh (gather_probe.py, and the narrow bf16 kernel with two
# gathering warp groups, on any card), then h200_call_s37c.sh (the wide split counts at T=16 H=64, the H200 only). (What this file held before, the wide kernel's bfloat16 partials, ran as session
# 36's call 1.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s36f.sh"
