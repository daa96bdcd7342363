#!/usr/bin/env bash
# Session 9, sixth and seventh calls: bf16_nope at H = 64 and 128 (the seventh: HEADS=32), T = 1..256,
# re-tuned with l2_prefetch searched (5 configs per study, the shipped config and its on/off twins
# first; its rows ran slower than bf16 with rope), then re-benched with the run's table
# ($OUT/tuned). $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
PARALLEL=8 bash benchmarks/h200_tune.sh bf16_nope ${TRIALS:-5} ${LIMIT_TUNE:-150} "--heads ${HEADS:-64,128} --tokens 1,4,16,64,128,256"
end=$(( $(date +%s) + ${LIMIT:-150} ))
for h in $(echo ${HEADS:-64,128} | tr , " "); do
  left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break
  SPARSEMLA_TUNED_DIR="$OUT/tuned" timeout $left python3 -m sparsemla.cli bench --no-prefill --formats bf16_nope \
    --tokens 1,4,16,64,128,256 --heads $h --out "$OUT/bench_bf16_nope_h$h" 2>&1 | grep -v Warn > "$OUT/bench_bf16_nope_h$h.log"
  echo "== bench bf16_nope H=$h rc=$?"; grep "^| bf16_nope " "$OUT/bench_bf16_nope_h$h.log" | sort -u | cut -c1-100
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
