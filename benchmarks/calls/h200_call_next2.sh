#!/usr/bin/env bash
# The fp8_ds_mla and model1 suite rows again, with the step columns (their rows in
# benchmarks/results/NVIDIA_H200.md predate them; FlashInfer has no SM90 path for either).
set -u
export PYTHONUNBUFFERED=1
for f in fp8_ds_mla model1; do
  timeout ${BENCH_LIMIT:-90} python3 -m sparsemla.cli bench --formats $f --out "$OUT/bench_$f" 2>&1 \
    | grep -v Warn > "$OUT/bench_$f.log"
  echo "== bench $f rc=$?"; tail -n 3 "$OUT/bench_$f.log" | cut -c1-200
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
