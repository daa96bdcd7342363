#!/usr/bin/env bash
# The next planned call (session 35): the narrow Gluon kernel's bfloat16 split-K partials (GluonKernel.parts_bf16,
# the combine's PARTS_BF16): correctness with them, then timed against float32 (benchmarks/calls/h200_call_s35b.sh).
# (What this file held before, head_fast.py's call, ran as session 35's call 2.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s35b.sh"
