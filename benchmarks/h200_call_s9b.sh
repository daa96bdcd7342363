#!/usr/bin/env bash
# Session 9, second call: the paging benchmark with the ticket copy (each program takes its next
# piece of a destination page from a counter) and the fused kernel (mark, compact and copy in
# one cooperative launch), then the fp8_ds_mla and model1 rows at H = 16 and 32 re-benched with
# the table re-tuned in the first call. $OUT is packed into one archive. (The ticket and fused
# copies were removed after this call; run again, it measures the current benchmark.)
set -u
export PYTHONUNBUFFERED=1
if [ "${PAGING:-1}" != 0 ]; then
  timeout ${PAGING_LIMIT:-240} python3 benchmarks/bench_paging.py --no-sweep --out "$OUT" 2>&1 | grep -v Warn > "$OUT/paging.log"
  echo "== paging rc=$?"; grep -i "touched\|fused\|error\|Traceback" "$OUT/paging.log" | grep -v "^|" | cut -c1-150
fi
end=$(( $(date +%s) + ${LIMIT:-300} ))
for fh in "fp8_ds_mla 32" "fp8_ds_mla 16" "model1 16" "model1 32"; do
  set -- $fh
  left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break
  timeout $left python3 -m sparsemla.cli bench --no-prefill --formats $1 --tokens 1,4,16,64,128,256 --heads $2 \
    --out "$OUT/bench_$1_h$2" 2>&1 | grep -v Warn > "$OUT/bench_$1_h$2.log"
  echo "== bench $1 H=$2 rc=$?"; grep "^| $1 " "$OUT/bench_$1_h$2.log" | sort -u | cut -c1-100
done
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
