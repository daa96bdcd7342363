#!/usr/bin/env bash
# Session 9, third call: the paging benchmark with cache hints on the copies (stream: evict_first
# loads, .cs stores) and more rows of marks; the bf16 and fp8 rows at H = 16 and 32 (T = 1..256)
# re-tuned with l2_prefetch searched (5 configs per study, the shipped config and its on/off twins
# first), then re-benched with the run's table ($OUT/tuned, which the bench reads before the
# package's), H = 32 first. $OUT is packed into one archive. (The cache hints were removed after
# this call; run again, it measures the current paging benchmark.)
set -u
export PYTHONUNBUFFERED=1
if [ "${PAGING:-1}" != 0 ]; then
  timeout ${PAGING_LIMIT:-100} python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
  echo "== paging rc=$?"; grep -i "touched\|error\|Traceback" "$OUT/paging.log" | grep -v "^|" | cut -c1-150
fi
PARALLEL=8 bash benchmarks/h200_tune.sh bf16,fp8 ${TRIALS:-5} ${LIMIT_TUNE:-250} "--heads 16,32 --tokens 1,4,16,64,128,256"
end=$(( $(date +%s) + ${LIMIT:-190} ))
for fh in "bf16 32" "fp8 32" "bf16 16" "fp8 16"; do
  set -- $fh
  left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break
  SPARSEMLA_TUNED_DIR="$OUT/tuned" timeout $left python3 -m sparsemla.cli bench --no-prefill --formats $1 \
    --tokens 1,4,16,64,128,256 --heads $2 --out "$OUT/bench_$1_h$2" 2>&1 | grep -v Warn > "$OUT/bench_$1_h$2.log"
  echo "== bench $1 H=$2 rc=$?"; grep "^| $1 " "$OUT/bench_$1_h$2.log" | sort -u | cut -c1-100
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
