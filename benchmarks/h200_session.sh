#!/usr/bin/env bash
# One device call: template experiments (config sweep on the rows issue 7 names) and the
# paging benchmark. Every step has its own time limit; logs and results go to $OUT.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1 SPARSEMLA_TUNED_DIR="$OUT/tuned"
step() { local limit=$1; shift; echo "== $1 $2 (limit ${limit}s)"; timeout "$limit" "$@"; echo "== rc=$?"; }
step 200 python3 benchmarks/sweep.py --out "$OUT/sweep_big" \
  --rows bf16:128:128,fp8:128:128,fp8_ds_mla:128:128,model1:128:128,bf16:16:128,fp8:16:128,bf16:4096:128 \
  --configs 64,64,0,8,2/64,64,0,8,3/64,32,0,8,3 2>&1 | grep -v Warn | tee "$OUT/sweep_big.log"
step 100 python3 benchmarks/sweep.py --out "$OUT/sweep_small" --rows bf16:256:16,fp8:256:16,fp8_ds_mla:256:16 \
  --configs 16,32,0,4,2/16,64,0,4,2/16,32,0,4,3/16,64,0,4,3 2>&1 | grep -v Warn | tee "$OUT/sweep_small.log"
step 70 python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn | tail -12
