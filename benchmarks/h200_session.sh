#!/usr/bin/env bash
# The next planned call (session 39; the H200 only, it stops at once on another card): gluon_select.py at bf16 and
# bf16 NoPE T=16 H=64 (4 splits against the shipped 8; 1.02x on an H100), then those rows benched
# (benchmarks/calls/h200_call_s37c.sh). Session 39 ran h200_call_s36f.sh on the H200 (the wide split-K rows, merged)
# and h200_call_s39a.sh's multicast probe on an H100 (benchmarks/results/session39/README.md).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s37c.sh"
