#!/usr/bin/env bash
# Session-5 device call: tune the last rows (fp8 H=128 T=128 again with the split seeds; model1
# H=128 T=256 and 4096, the two buckets the shipped table lacks), resuming
# benchmarks/results/tune_run2/, then benchmark the re-tuned rows through the new table.
# $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1 PARALLEL=8  # each h200_tune.sh run resumes where the last one stopped
bash benchmarks/h200_tune.sh fp8 22 75 "--heads 128 --tokens 128"
bash benchmarks/h200_tune.sh model1 8 120 "--heads 128 --tokens 256,4096"
export SPARSEMLA_TUNED_DIR="$OUT/tuned"
bench() {  # NAME ARGS...
  local name=$1; shift
  timeout 60 python3 -m sparsemla.cli bench --no-prefill "$@" --out "$OUT/bench_$name" 2>&1 | grep -v Warn > "$OUT/bench_$name.log"
  echo "== bench $name rc=$?"
}
bench fp8 --formats fp8 --tokens 16,64,128 --heads 64,128
bench fp8_nope --formats fp8_nope --tokens 16,256 --heads 64,128
bench model1 --formats model1 --tokens 256 --heads 128
grep -h "\] best" "$OUT"/tune_*.log | cut -c1-200
for f in "$OUT"/bench_*/NVIDIA_H200.md; do grep "^| [a-z]" "$f" | cut -d'|' -f2-7,19; done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
