#!/usr/bin/env bash
# The next device call on the H200: the paging benchmark (with page_split's mark_dedup rows),
# finish the tuning run (model1 H >= 32, resumed from benchmarks/results/tune_run2/), then grid
# vs TPE on three specs. Each step has its own limit;
# logs and results go to $OUT.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
# Earlier calls: the template sweep (results/session3/sweep_*), benchmarks/h200_tune.sh and
# benchmarks/h200_final.sh (results/tune_run2/, results/session3/bench_*).
set -u
PYTHONUNBUFFERED=1 timeout 70 python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn | tail -n 14
FORMATS=model1 TRIALS=8 PARALLEL=8 LIMIT=${TUNE_LIMIT:-200} bash benchmarks/h200_tune.sh
export PYTHONUNBUFFERED=1
timeout ${COMPARE_LIMIT:-250} python3 benchmarks/tune_compare.py --out "$OUT/tune_compare" --parallel 8 \
  --max-spill 2048 2>&1 | grep -v Warn | tail -n 12
