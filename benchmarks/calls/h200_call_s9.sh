#!/usr/bin/env bash
# Session 9, first call: re-tune the fp8_ds_mla and model1 rows at H = 16 and 32 (T = 1..256) now
# that l2_prefetch is searched (5 configs per study: the default, the shipped config and its on/off
# twins first), then fp8_ds_mla H = 32 T = 64 deeper (its 12-config study missed h32 n32 s8 w4 st2,
# which the row had before). Resumes benchmarks/results/tune_run2. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
PARALLEL=8 bash benchmarks/h200_tune.sh fp8_ds_mla,model1 ${TRIALS:-5} ${LIMIT1:-300} "--heads 16,32 --tokens 1,4,16,64,128,256"
PARALLEL=8 bash benchmarks/h200_tune.sh fp8_ds_mla ${DEEP_TRIALS:-24} ${LIMIT2:-150} "--heads 32 --tokens 64"
pack_out
