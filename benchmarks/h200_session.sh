#!/usr/bin/env bash
# The next device call on the H200 (session 11, call 5): the paging benchmark with the new default
# (the list copy's grid 16 warps x 2 programs per SM, with the lead share), for the committed table
# (benchmarks/results/paging_NVIDIA_H200.md), beside the session-10 grid, the plain path and the
# chunk copy without the lead share.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 240 paging_final
pack_out
