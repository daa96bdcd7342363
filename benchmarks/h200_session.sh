#!/usr/bin/env bash
# The next device call on the H200, most important first, each step with its own limit:
#  1. index_prefetch against the shipped configs on the rows issue 7 names (the lead: the KV gather
#     was only ever one tile ahead; with prefetch Triton buffers num_stages - 1 tiles),
#  2. the paging benchmark (with page_split's mark_dedup rows),
#  3. finish the tuning run (model1 H >= 32, into benchmarks/results/tune_run2/'s table),
#  4. grid vs TPE on three specs.
# Logs and results go to $OUT; afterwards copy $OUT/tuned/NVIDIA_H200/sparse_mla.json and tune.journal
# into benchmarks/results/tune_run2/ and the table into tuned/NVIDIA_H200/.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
step() { local limit=$1; shift; echo "== $1 $2 (limit ${limit}s)"; timeout "$limit" "$@"; echo "== rc=$?"; }
step 150 python3 benchmarks/sweep.py --out "$OUT/sweep_prefetch" \
  --rows bf16:128:128,fp8:128:128,fp8_ds_mla:128:128,bf16:4096:128 \
  --configs 64,64,0,8,2/64,32,0,8,3,1/64,32,0,8,4,1/64,16,0,8,4,1/64,64,0,8,2,1 2>&1 | grep -v Warn \
  | tee "$OUT/sweep_prefetch.log"
step 90 python3 benchmarks/sweep.py --out "$OUT/sweep_prefetch16" --rows bf16:256:16,fp8:256:16,model1:256:16 \
  --configs 16,64,0,4,2/16,64,0,4,3,1/16,32,0,4,4,1/16,128,0,4,2,1 2>&1 | grep -v Warn \
  | tee "$OUT/sweep_prefetch16.log"
step 70 python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn | tail -n 14
FORMATS=model1 TRIALS=8 PARALLEL=8 LIMIT=${TUNE_LIMIT:-150} bash benchmarks/h200_tune.sh
step ${COMPARE_LIMIT:-120} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel 8 \
  --max-spill 2048 2>&1 | grep -v Warn | tail -n 12
