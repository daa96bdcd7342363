#!/usr/bin/env bash
# The next device call on the H200 (planned in session 10): fp8 (with rope) H=128 T=128 and 256
# re-tuned, their studies taken to 9 measured configs: the existing studies (session 7) never measured
# the shipped config's p_exchange twin, which gained 7-8% for fp8_nope H=128 (session 10); re-benched.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
# Afterwards: copy $OUT/tune.journal and $OUT/tuned/NVIDIA_H200/sparse_mla.json into tune_run2/, merge
# with `benchmarks/merge_tuned.py ... --only-faster --match REGEX`, then `merge_bench.py --table`
# (drops the rows of entries the merge kept), `tuned_report.py` and `compile_report.py` (DEVELOPERS.md).
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
PARALLEL=8 bash benchmarks/h200_tune.sh fp8 9 170 "--heads 128 --tokens 128,256"
bench_rows fp8 128 128,256 70 "$OUT/tuned"
pack_out
