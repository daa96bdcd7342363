#!/usr/bin/env bash
# Session 7: the paging benchmark (claim_copy's first measurement; PAGING=0 skips it), then the
# suite rows whose tuned configs changed in session 6 and were not re-benched: H = 64 at every T
# and H = 128 at T = 4, 64, 256 (each with its T = 4096 prefill row), for the formats given (default bf16 fp8). One bench run per
# (format, heads) so a run cut by LIMIT keeps the ones before it. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
end=$(( $(date +%s) + ${LIMIT:-540} ))
if [ "${PAGING:-1}" != 0 ]; then
  timeout ${PAGING_LIMIT:-200} python3 benchmarks/bench_paging.py --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
  echo "== paging rc=$?"; grep "touched" "$OUT/paging.log" | cut -c1-150
fi
for f in ${FORMATS:-bf16 fp8}; do
  for ht in "64 1,4,16,64,128,256" "128 4,64,256"; do
    set -- $ht
    left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break 2
    timeout $left python3 -m sparsemla.cli bench --formats $f --tokens $2 --heads $1 \
      --out "$OUT/bench_${f}_h$1" 2>&1 | grep -v Warn > "$OUT/bench_${f}_h$1.log"
    echo "== bench $f H=$1 rc=$?"; grep "^| $f " "$OUT/bench_${f}_h$1.log" | cut -c1-110
  done
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
