#!/usr/bin/env bash
# The next planned call (session 39): smem_contention_probe.py on any sm90 card (does other warp groups' shared-memory
# traffic stretch the narrow kernel's S^T chain as the fp8 T=256 H=16 profiles show?), then on the H200 only
# h200_call_s37c.sh's steps (gluon_select.py at bf16 and bf16 NoPE T=16 H=64, those rows benched):
# benchmarks/calls/h200_call_s39b.sh.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s39b.sh"
