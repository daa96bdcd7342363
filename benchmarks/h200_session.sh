#!/usr/bin/env bash
# The next planned call (prepared in session 43; sessions 43 and 44 got no H200 to run it), for the H200:
# GluonKernel.raw (the raw-row kernel the runtime runs for 16-head one-split Gluon entries with an fp8_e4m3 or
# fp8_ds_mla cache) against the dequantizing kernel, and the suite's fp8, fp8_nope and fp8_ds_mla T=128, 256 H=16 rows
# benched for the H200's results (h200_call_s43d.sh, the H200 only, ~8 min). (Session 41's s41a, the shipped
# kernels' floors, and session 39's s39b's s37c, H200-only split counts, are still prepared.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
here="$(dirname "$0")"
bash "$here/calls/h200_call_s43d.sh"
