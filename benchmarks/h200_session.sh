#!/usr/bin/env bash
# The next device call on the H200 (planned in session 10), each step with its own limit:
#   the paging benchmark (page_split's new default, a lead 1/8 of the ids from 128K ids, against
#   the plain path, on four pools), then fp8_nope H=128 re-tuned with l2_prefetch searched (the
#   last entries from before it) and re-benched.
# The studies resume benchmarks/results/tune_run2/; the bench reads the run's table ($OUT/tuned).
# Afterwards: copy $OUT/tune.journal and $OUT/tuned/NVIDIA_H200/sparse_mla.json into tune_run2/, merge
# with `benchmarks/merge_tuned.py ... --only-faster --match REGEX`, then `merge_bench.py --table`
# (drops the rows of entries the merge kept), `tuned_report.py` and `compile_report.py` (DEVELOPERS.md).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 150
PARALLEL=8 bash benchmarks/h200_tune.sh fp8_nope 5 200 "--heads 128 --tokens 1,4,16,64,128,256"
bench_rows fp8_nope 128 1,4,16,64,128,256 60 "$OUT/tuned"
pack_out
