#!/usr/bin/env bash
# The next device call on the H200 (planned in session 10), each step with its own limit:
#   the paging benchmark (page_split's copy_ahead, lead_split 1/8 with the copy's grid swept, and a
#   64 x 2048-id pool), then fp8_nope at every H re-tuned with l2_prefetch searched and re-benched
#   (its entries are the last from before l2_prefetch).
# The studies resume benchmarks/results/tune_run2/; the benches read the run's table ($OUT/tuned).
# Afterwards: copy $OUT/tune.journal and $OUT/tuned/NVIDIA_H200/sparse_mla.json into tune_run2/, merge
# with `benchmarks/merge_tuned.py ... --only-faster --match REGEX`, then `merge_bench.py --table`
# (drops the rows of entries the merge kept), `tuned_report.py` and `compile_report.py` (DEVELOPERS.md).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 150
PARALLEL=8 bash benchmarks/h200_tune.sh fp8_nope 5 240 "--heads 16,32,64,128 --tokens 1,4,16,64,128,256"
for h in 16 32 64 128; do bench_rows fp8_nope $h 1,4,16,64,128,256 50 "$OUT/tuned"; done
pack_out
