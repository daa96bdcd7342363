#!/usr/bin/env bash
# The next planned call (session 42), for the H200: GluonKernel.raw (the raw-row fp8_e4m3 kernel the runtime now runs
# for 16-head one-split Gluon entries) against the dequantizing kernel, and the suite's fp8 / fp8_nope T=128, 256
# H=16 rows benched against FlashInfer for the H200's results (h200_call_s42e.sh, the H200 only, ~6 min), then the
# prototype's variants beside it (h200_call_s42a.sh, any sm90 card, ~60 s). (Session 41's s41a, the shipped
# kernels' floors, and session 39's s39b's s37c, H200-only split counts, are still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s42e.sh"
bash "$here/calls/h200_call_s42a.sh"
