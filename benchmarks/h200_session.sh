#!/usr/bin/env bash
# The next planned call (benchmarks/calls/s59_call.sh): on an H200, issue 7's prepared steps (h200_call_s49a.sh,
# ~3-6 min: session 48's s48c reordered, issue 7's rows first: the raw rows benched at T=256 H=16 (the raw kernel
# without its L2 prefetch, session 48's default), that kernel against the prefetch, the T=128 rows, then the
# dequantizing kernels' group C with and without its prefetch), then max_logits (benchmarks/calls/
# max_logits_fused_gpu.py); on any other card, max_logits as committed (session 59: red after the output, the raw
# kernel's store) against a306115's (atom, the raw kernel stepping aside), installed afresh in one call.
# (Session 41's s41a, the shipped kernels' floors, and session 39's s39b's s37c, H200-only split counts, are still
# prepared.) Afterwards: where s49a's step 2 shows the H200 faster without the raw kernel's prefetch, as the H100 was,
# apply benchmarks/results/session51/drop_raw_prefetch.patch (its H200_NUMBERS placeholder filled in; since session
# 59 with --exclude='tuned/*', its table stamps being stale, then benchmarks/restamp.py).
# On the host first (the device has no git): git archive a306115 templates gen runtime tuned > .whl/base.tar
#   bash benchmarks/h200_session.sh   (on the device, after: source .whl/prelude.sh)
set -u
BASE_TAR="${BASE_TAR:-.whl/base.tar}" bash "$(dirname "$0")/calls/s59_call.sh"
