#!/usr/bin/env bash
# The next planned call (prepared in session 35): the narrow Gluon configs re-selected at T=1 H=128 now that split-K
# partials are bfloat16 (benchmarks/calls/h200_call_s36a.sh; gluon_select.py --narrow, then the rows benched).
# (What this file held before, correctness with the defaults, ran as session 35's call 5.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s36a.sh"
