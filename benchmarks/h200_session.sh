#!/usr/bin/env bash
# The next planned call (session 40): proto_fp8_mma.py on any sm90 card, the narrow fp8_e4m3 kernel with both
# products on e4m3 operands: unit checks of S^T and O^T against PyTorch, the kernel against the reference, then timed
# beside the shipped kernel at T=256 H=16 with two diagnostics (no V^T stores; no P.V):
# benchmarks/calls/h200_call_s40a.sh. (Session 39's s39b, the contention probe then s37c on the H200, is still
# prepared: its probe ran in session 40's call 1; s37c did not.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s40a.sh"
