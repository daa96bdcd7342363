#!/usr/bin/env bash
# The next planned call (prepared in session 38, which got no machine): two units a program (Config num_warps=16,
# GluonKernel.pairs) against the shipped one-stage narrow fp8 entries at T=256 H=16, with its correctness cases,
# its turn variants and its profile (benchmarks/calls/h200_call_s38a.sh; any sm90 card). If pairs wins, on the H200:
# benchmarks/calls/h200_call_s38b.sh (gluon_select.py --narrow --pairs, then the rows benched). Also on the H200 only:
# benchmarks/calls/h200_call_s36f.sh (the suite's wide split-K rows against FlashInfer with bfloat16 partials: the
# H200's table still holds their float32-partial times) and h200_call_s37c.sh (the wide split counts at T=16 H=64);
# on any card: h200_call_s37f.sh (gather_probe.py with 128 down to 16 programs: is the T=1 gather bound by the L2 as a
# whole or by each SM?).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
exec bash "$(dirname "$0")/calls/h200_call_s38a.sh"
