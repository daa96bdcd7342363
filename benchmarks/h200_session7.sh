#!/usr/bin/env bash
# Session 20, call 3 (about 1.5 minutes): the paging benchmark twice (GPU checks first, with the lead share
# listed in one launch by page_lead_list_kernel among them; then its timings, lead_list against the default).
# Ran as cfab60a; PagingConfig.lead_list was then removed (the script now runs the paging benchmark twice).
#   bash benchmarks/h200_session7.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
paging 200 paging
paging 200 paging2
pack_out
