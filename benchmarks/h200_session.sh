#!/usr/bin/env bash
# The next planned call (session 35): whether the narrow Gluon kernel's split-K partials cost by their store
# instructions or by their bytes (benchmarks/calls/h200_call_s35a.sh, head_fast.py; timing only).
# (What this file held before, session 34's float16 partials call, ran as session 35's call 1.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s35a.sh"
