#!/usr/bin/env bash
# The next planned call (prepared in session 35): the wide Gluon kernel's bfloat16 split-K partials, never run yet:
# correctness with them, then timed against float32 (benchmarks/calls/h200_call_s36b.sh). After it:
# benchmarks/calls/h200_call_s36a.sh (the narrow configs re-selected at T=1 H=128 with bfloat16 partials).
# (What this file held before, correctness with the defaults, ran as session 35's call 5.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s36b.sh"
