#!/usr/bin/env bash
# One device call that checks, tunes and measures on the H200; every step has its own time
# limit so one slow step cannot eat the rest, cheapest and most important first.
# Logs and results go to $OUT.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1 SPARSEMLA_TUNED_DIR="$OUT/tuned"
step() { local limit=$1; shift; echo "== $1 $2 (limit ${limit}s)"; timeout "$limit" "$@"; echo "== rc=$?"; }
step 80 python3 benchmarks/gpu_correctness.py 2>&1 | grep -v Warn | tee "$OUT/gpu_correctness.log" | tail -3
step 50 python3 benchmarks/check_flashinfer.py --overhead-only 2>&1 | grep -v Warn | tail -14
step 70 python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn | tail -12
step 160 python3 -m sparsemla.cli tune --formats fp8,bf16 --heads 128 --tokens 1,16,128 --trials 8 \
  --max-spill 2048 --timeout 60 --jobs 16 --storage "$OUT/tune.journal" --out "$OUT/tuned" 2>&1 \
  | grep -v Warn > "$OUT/tune.log"; tail -5 "$OUT/tune.log"
step 90 python3 -m sparsemla.cli bench --formats fp8,bf16 --heads 128 --tokens 1,16,128 --no-prefill \
  --out "$OUT/bench_tuned" 2>&1 | grep -v Warn | tail -9
