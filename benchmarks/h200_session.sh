#!/usr/bin/env bash
# The next device call on the H200 (planned in session 10). First the paging benchmark twice, with
# and without runtime/launch.py's direct launches (SPARSEMLA_FAST_LAUNCH=1, built in session 10, off
# until measured): its correctness and graph checks run through them, and the eager columns show
# the host time they save (40-60 us per launch through Triton's JIT). If both hold, turn it on.
# Then fp8 (with rope) H=128: the p_exchange twin of the shipped T=128/256 config ran 2.3-2.4% faster
# in sweep.py (session 10 call 8), but the tuner's studies of those buckets never measured it (their
# seeds were enqueued in session 7, and a resumed study does not add them again). Fresh 5-config
# studies (their own journal, so the seeds are the shipped entry and its twins) give the table a
# tuner measurement; then merge as below.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
# Afterwards: `benchmarks/merge_tuned.py $OUT/tuned/NVIDIA_H200/sparse_mla.json tuned/NVIDIA_H200/sparse_mla.json
# --only-faster`, then `merge_bench.py --table`, `tuned_report.py` and `compile_report.py` (DEVELOPERS.md).
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
paging 120 paging_jit
SPARSEMLA_FAST_LAUNCH=1 paging 120 paging_direct
mkdir -p "$OUT/tuned/NVIDIA_H200"
timeout 240 python3 -m sparsemla.cli tune --formats fp8 --heads 128 --tokens 64,128,256 --trials 5 --parallel 8 \
  --jobs 16 --max-spill 2048 --timeout 60 --storage "$OUT/tune_fresh.journal" --out "$OUT/tuned" \
  > "$OUT/tune_fp8_h128.log" 2>&1
echo "== tune rc=$?"; grep -v Warn "$OUT/tune_fp8_h128.log" | grep "\] best" | cut -c1-200
bench_rows fp8 128 64,128,256 70 "$OUT/tuned"  # with the run's table
pack_out
