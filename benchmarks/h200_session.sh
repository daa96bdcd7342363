#!/usr/bin/env bash
# The next device call on the H200 (planned in session 10): the paging benchmark (page_split's new
# default, a lead 1/8 of the ids from 128K ids, against the plain path, on four pools).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
# A re-tune's steps (h200_tune.sh, then bench_rows with the run's table) and what follows them on
# the CPU (merge_tuned.py --only-faster, merge_bench.py --table, tuned_report.py, compile_report.py)
# are in DEVELOPERS.md; benchmarks/results/session10/README.md has the last ones.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 240
pack_out
