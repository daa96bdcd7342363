#!/usr/bin/env bash
# The next device calls on the H200 (planned in session 9), each step with its own limit:
#   CALL=1: the paging benchmark (page_split's lead_split variants, not yet measured), then
#           bf16_nope H=16 (and H=32 T=256) re-tuned with l2_prefetch searched and re-benched;
#   CALL=2: fp8_nope at every H re-tuned the same way and re-benched.
# The studies resume benchmarks/results/tune_run2/; the benches read the run's table ($OUT/tuned).
# Afterwards: copy $OUT/tune.journal and $OUT/tuned/NVIDIA_H200/sparse_mla.json into tune_run2/, merge
# with `benchmarks/merge_tuned.py ... --only-faster --match REGEX`, keep the old bench rows of the
# entries it kept, then `merge_bench.py`, `tuned_report.py` and `compile_report.py` (DEVELOPERS.md).
#   CALL=1 bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
bench() { bench_rows "$1" "$2" 1,4,16,64,128,256 "$3" "$OUT/tuned"; }  # FORMAT HEADS LIMIT, the run's table
if [ "${CALL:-1}" = 1 ]; then
  paging 100
  PARALLEL=8 bash benchmarks/h200_tune.sh bf16_nope 5 100 "--heads 16 --tokens 1,4,16,64,128,256"
  PARALLEL=8 bash benchmarks/h200_tune.sh bf16_nope 5 40 "--heads 32 --tokens 256"
  bench bf16_nope 16 80
  bench bf16_nope 32 80
else
  PARALLEL=8 bash benchmarks/h200_tune.sh fp8_nope 5 300 "--heads 16,32,64,128 --tokens 1,4,16,64,128,256"
  for h in 16 32 64 128; do bench fp8_nope $h 60; done
fi
pack_out
