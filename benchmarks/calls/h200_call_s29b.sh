#!/usr/bin/env bash
# Prepared in session 29: the call after benchmarks/h200_session.sh. Issue 4's open row (page_split's scattered
# pool at 0.78-0.81 of copy_, target 0.8 reliably): the paging benchmark twice, for the spread between runs.
#   bash benchmarks/calls/h200_call_s29b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 250 paging_run1
paging 250 paging_run2
pack_out
