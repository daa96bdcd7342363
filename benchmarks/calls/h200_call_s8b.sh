#!/usr/bin/env bash
# Session 8, second call: the paging benchmark with the new touched default (2 rows of marks,
# one L2 sector each; compact loads before it clears); a deeper tune of bf16 H=16 T=256 (the
# copy-ceiling row at 0.85 of its 0.9 target: 40 configs instead of 5); then the H = 64 rows
# of the four formats re-tuned now that l2_prefetch is searched (5 configs per study: the
# default, the shipped config and its on/off twins first). $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
if [ "${PAGING:-1}" != 0 ]; then
  paging ${PAGING_LIMIT:-110}
fi
PARALLEL=8 bash benchmarks/h200_tune.sh bf16 ${DEEP_TRIALS:-40} ${LIMIT_DEEP:-140} "--heads 16 --tokens 256"
PARALLEL=8 bash benchmarks/h200_tune.sh ${FORMATS:-bf16,fp8,fp8_ds_mla,model1} ${TRIALS:-5} ${LIMIT64:-270} "--heads 64 --tokens 1,4,16,64,128,256"
pack_out
