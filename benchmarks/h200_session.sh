#!/usr/bin/env bash
# The next device call on the H200 (session 11, call 4): the paging benchmark with `lead_ids` (the
# lead share listed by one program, page_lead_kernel: one launch instead of a mark and a compact
# before the lead copy starts), with 16 warps x 2 programs per SM (faster than the default's 8 x 4
# with the lead share in every run since session 10), and its GPU correctness and graph checks.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 240 paging_lead
pack_out
