#!/usr/bin/env bash
# The next device call on the H200 (session 11, call 3): the paging benchmark with the chunk copy
# (page_split_chunk_kernel, PagingConfig.chunks; it replaced the spread copy). benchmarks/proto_copy.py
# (call 2) timed it alone at 68.6 us on 834 scattered pages against 72.1 us for the list copy
# (x8 chunks, 4 warps x 16 programs per SM); this run measures whole page_split calls with it, with
# and without the lead share, on the four pools, and checks it on the GPU (correctness, graph replay).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 240 paging_chunks
pack_out
