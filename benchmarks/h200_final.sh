#!/usr/bin/env bash
# Last device call of the H200 run: finish tuning (packed formats), then the suite benchmark for
# the formats FlashInfer also runs, through the tuned table (auto dispatch vs FlashInfer).
set -u
FORMATS=fp8_ds_mla,model1 TRIALS=5 PARALLEL=8 LIMIT=${TUNE_LIMIT:-230} bash benchmarks/h200_tune.sh
export PYTHONUNBUFFERED=1 SPARSEMLA_TUNED_DIR="$OUT/tuned"
for f in bf16 fp8; do  # one run per format: a cut-off run loses only its own rows
  timeout ${BENCH_LIMIT:-100} python3 -m sparsemla.cli bench --formats $f --out "$OUT/bench_$f" 2>&1 \
    | grep -v Warn > "$OUT/bench_$f.log"
  echo "== bench $f rc=$?"; tail -n 4 "$OUT/bench_$f.log" | cut -c1-250
done
