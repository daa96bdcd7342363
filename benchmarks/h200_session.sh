#!/usr/bin/env bash
# The next planned call (session 35): the suite's narrow split-K rows re-measured with bfloat16 partials, the
# runtime's default since session 35's call 3 (benchmarks/calls/h200_call_s35c.sh).
# (What this file held before, parts_bf16.py's call, ran as session 35's call 3.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s35c.sh"
