#!/usr/bin/env bash
# Session 9, fourth and fifth calls: the paging benchmark with wider mark spacing (64 and 128 B: one
# L2 line per mark; the fifth call with 128 B as the default) and rows of marks, on the scattered,
# the 4-page and a consecutive-pages pool (whose marks crowd fewer L2 lines). $OUT is packed into
# one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging ${PAGING_LIMIT:-200}
pack_out
