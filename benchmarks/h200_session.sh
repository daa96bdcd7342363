#!/usr/bin/env bash
# The next planned call (prepared at the end of session 30, whose calls ran on an H100): the suite's bench, on an H200,
# of the rows whose kernels session 30's new defaults changed, against FlashInfer in the same process, for
# ../results/NVIDIA_H200.md (benchmarks/merge_bench.py):
#  - every Gluon entry now waits for the stream's previous kernel (GluonKernel.pdl_wait; H100: 1.005-1.030x in 10 of
#    14 small-T rows, bf16 T=1 H=128 9.55 -> 9.30 us): the T=1 and T=4 rows at 64 and 128 heads;
#  - the persistent prefill rows split their last round (GluonKernel.tail_split; H100: 1.003-1.020x): T=4096.
# This call: bf16 and NoPE (prefill included); benchmarks/calls/h200_call_s31b.sh the fp8 formats. On another GPU the
# results go to its own file (benchmarks/results/<gpu>.md), not the H200's.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
for fmt in bf16 bf16_nope; do
  timeout 270 python3 -m sparsemla.cli bench --formats $fmt --tokens 1,4 --heads 64,128 --out "$OUT/bench_$fmt" \
    > "$OUT/bench_$fmt.log" 2>&1
  echo "== bench $fmt rc=$?"; grep "^| $fmt " "$OUT/bench_$fmt.log" | sort -u | cut -c1-120
done
pack_out
