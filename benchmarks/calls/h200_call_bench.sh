#!/usr/bin/env bash
# Session-4 device call: the paging benchmark (mark strategies, per-kernel breakdown), a longer
# tuning of the fp8 rows that lost to FlashInfer (H=128 T=16,64; H=64 T=128; resuming from
# benchmarks/results/tune_run2/), then the suite benchmark through that table for fp8, fp8_nope
# and bf16_nope. Everything under $OUT is packed into one archive at the end.
set -u
export PYTHONUNBUFFERED=1
timeout 90 python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn | tail -n 26
FORMATS=fp8 TRIALS=20 PARALLEL=8 LIMIT=50 TUNE_ARGS="--heads 128 --tokens 16,64" bash benchmarks/h200_tune.sh
mv "$OUT/tune_fp8.log" "$OUT/tune_fp8_h128.log"
FORMATS=fp8 TRIALS=20 PARALLEL=8 LIMIT=35 TUNE_ARGS="--heads 64 --tokens 128" bash benchmarks/h200_tune.sh
export SPARSEMLA_TUNED_DIR="$OUT/tuned"
for f in fp8 fp8_nope bf16_nope; do  # one run per format: a cut-off run loses only its own rows
  timeout ${BENCH_LIMIT:-90} python3 -m sparsemla.cli bench --formats $f --out "$OUT/bench_$f" 2>&1 \
    | grep -v Warn > "$OUT/bench_$f.log"
  echo "== bench $f rc=$?"; tail -n 4 "$OUT/bench_$f.log" | cut -c1-250
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
