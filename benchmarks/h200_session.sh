#!/usr/bin/env bash
# The next planned call (session 39; the H200 only, it stops at once on another card): the suite's wide split-K rows
# against FlashInfer with bfloat16 partials, whose float32-partial times the H200's table still holds
# (benchmarks/calls/h200_call_s36f.sh [LIMIT_S]). Also prepared, the H200 only: h200_call_s37c.sh (the wide split
# counts at T=16 H=64). Session 39 ran h200_call_s39a.sh's probe on an H100 (benchmarks/results/session39/README.md).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s36f.sh" "$@"
