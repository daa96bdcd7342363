#!/usr/bin/env bash
# Session 19, calls 4-8 (about 1 minute): page_split's TMA copy in the product (PagingConfig.tma_stages,
# the sm90 default with a lead 1/32): the paging benchmark with its sweep (GPU correctness and CUDA-graph
# checks first, the TMA copy at 256->64/128, 128->16 and 64->32 among them), then again without the
# sweep for a second measurement of the same rows. (Calls 4 and 5 stopped at checks; call 6 ran commit
# 5c3889f, call 7 4880c76 with PagingConfig.lead_claim, since removed; call 8 tma_split variants, since
# removed; call 10 the final kernels, eager calls back on the list copy.)
#   bash benchmarks/h200_session4.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
mkdir -p "$OUT/paging"
timeout 260 python3 benchmarks/bench_paging.py --out "$OUT/paging" > "$OUT/paging.log" 2>&1
echo "== paging (sweep) rc=$?"; grep -i "checked\|touched\|error\|Traceback\|assert" "$OUT/paging.log" | grep -v "^|" | cut -c1-160
paging 200 paging2
pack_out
