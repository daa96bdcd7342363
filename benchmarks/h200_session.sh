#!/usr/bin/env bash
# The next planned call (prepared in session 36): the suite's rows whose H200 entries run the wide Gluon kernel with
# split-K, benched against FlashInfer on the H200 with bfloat16 partials (benchmarks/calls/h200_call_s36f.sh; every
# call of session 36 got an H100, so the H200's table still holds their float32-partial times). It stops at once on
# another card. After it, in this order:
#   benchmarks/calls/h200_call_s37d.sh (any card; session 37): the narrow bf16 kernel's ready_parts, alone and with two
#     gathering warp groups, checked and timed against the shipped kernel;
#   benchmarks/calls/h200_call_s37b.sh (any card): gather_probe.py, and the two-gatherer configs by t1_configs.py;
#   benchmarks/calls/h200_call_s37c.sh (the H200 only): the wide split counts at T=16 H=64.
# (What this file held before, the wide kernel's bfloat16 partials, ran as session 36's call 1.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s36f.sh"
