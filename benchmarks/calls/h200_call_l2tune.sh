#!/usr/bin/env bash
# Session 7: re-tune shipped entries now that l2_prefetch is searched (and on in the sm90
# default): each new study measures the default, the shipped config, its l2_prefetch twin, then
# its p_exchange and index_prefetch twins (gen.tune.incumbent_seeds), TRIALS in all. First the
# issue-7 rows H = 128 at every decode T and at T = 32 (issue 7 has a T = 32 row: it gets its
# own bucket), then H = 16 at T = 256 (the copy-ceiling rows).
# $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
F=${FORMATS:-fp8_ds_mla,model1,fp8,bf16}
PARALLEL=8 bash benchmarks/h200_tune.sh $F ${TRIALS:-5} ${LIMIT:-400} "--heads 128 --tokens 1,4,16,32,64,128,256"
PARALLEL=8 bash benchmarks/h200_tune.sh $F ${TRIALS:-5} ${LIMIT16:-110} "--heads 16 --tokens 256"
pack_out
