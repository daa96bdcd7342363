#!/usr/bin/env bash
# The next planned call (session 35): gpu_correctness.py's narrow and many-empty-splits cases with the runtime's
# defaults, bfloat16 split-K partials among them (benchmarks/calls/h200_call_s35d.sh).
# (What this file held before, the bench of the narrow split-K rows, ran as session 35's call 4.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s35d.sh"
