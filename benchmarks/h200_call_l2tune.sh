#!/usr/bin/env bash
# Session 7: re-tune the shipped entries now that l2_prefetch is searched (and on in the sm90
# default): each new study measures the default, the shipped config, its l2_prefetch twin, then
# its p_exchange and index_prefetch twins (gen.tune.incumbent_seeds), TRIALS in all.
#   FORMATS=... HEADS=128 TOKENS=1,4,16,64,128,256 bash benchmarks/h200_call_l2tune.sh
# $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
PARALLEL=8 bash benchmarks/h200_tune.sh ${FORMATS:-fp8_ds_mla,model1,fp8,bf16} ${TRIALS:-5} ${LIMIT:-520} \
  "--heads ${HEADS:-128} --tokens ${TOKENS:-1,4,16,64,128,256}"
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
