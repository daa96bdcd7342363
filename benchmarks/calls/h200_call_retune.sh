#!/usr/bin/env bash
# Session-5 device call: retune the fp8 / fp8_nope rows that lost to FlashInfer (now with the
# default's split-count neighbours as seeds), resuming benchmarks/results/tune_run2/, then the
# suite benchmark of both formats through the new table. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1 PARALLEL=8  # each h200_tune.sh run resumes where the last one stopped
bash benchmarks/h200_tune.sh fp8_nope 22 110 "--heads 32,64,128 --tokens 16"
bash benchmarks/h200_tune.sh fp8 24 60 "--heads 128 --tokens 16,64"
bash benchmarks/h200_tune.sh fp8_nope 22 70 "--heads 128 --tokens 64,128"
bash benchmarks/h200_tune.sh fp8_nope 22 40 "--heads 64 --tokens 256"
bash benchmarks/h200_tune.sh fp8 28 35 "--heads 64 --tokens 128"
export SPARSEMLA_TUNED_DIR="$OUT/tuned"
for f in fp8 fp8_nope; do
  timeout ${BENCH_LIMIT:-85} python3 -m sparsemla.cli bench --formats $f --out "$OUT/bench_$f" 2>&1 \
    | grep -v Warn > "$OUT/bench_$f.log"
  echo "== bench $f rc=$?"
done
grep -h "\] best" "$OUT"/tune_*.log | cut -c1-230
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
