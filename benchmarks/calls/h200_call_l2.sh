#!/usr/bin/env bash
# Session 7: does an L2 prefetch of the gathered rows (Config.l2_prefetch, tiles ahead) pay?
# The configs with l2_prefetch 0/1/2/4 on the suite's 262K-slot pool, then the same with the
# indices drawn from a 16K-slot pool (L2-resident: the time with no HBM wait at all, the most a
# prefetch can give; the kernels are compiled by then). $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
ROWS=${ROWS:-bf16:128:64,bf16:128:128,fp8:128:128,fp8_ds_mla:128:128,model1:128:128}
BIG="64,64,1,8,2/64,64,1,8,2,0,0,1/64,64,1,8,2,0,0,2/64,64,1,8,2,0,0,4/64,64,1,8,2,0,1,0/64,64,1,8,2,0,1,2/32,64,1,4,2/32,64,1,4,2,0,0,2/64,32,1,8,4/64,32,1,8,4,0,0,2"
SMALL=${SMALL:-fp8:256:16,bf16:256:16,fp8_ds_mla:256:16}
SMALLCFG="16,32,2,4,2/16,32,2,4,2,0,0,2/16,32,2,4,2,0,0,4/16,64,2,4,2/16,64,2,4,2,0,0,2/16,64,4,8,2/16,64,4,8,2,0,0,2"
timeout ${SWEEP_LIMIT:-300} python3 benchmarks/sweep.py --rows $ROWS --configs "$BIG" --out "$OUT" 2>&1 | grep -v Warn > "$OUT/sweep_l2.log"
echo "== l2 rc=$?"
timeout ${POOL_LIMIT:-90} python3 benchmarks/sweep.py --rows $ROWS --configs "$BIG" --pool 16384 --out "$OUT" 2>&1 | grep -v Warn > "$OUT/sweep_pool.log"
echo "== pool rc=$?"
timeout ${SMALL_LIMIT:-120} python3 benchmarks/sweep.py --rows $SMALL --configs "$SMALLCFG" --out "$OUT/h16" 2>&1 | grep -v Warn > "$OUT/sweep_l2_h16.log"
echo "== h16 rc=$?"
cat "$OUT/sweep_pool.log" | sed 's/^/POOL /'; cat "$OUT/sweep_l2.log" "$OUT/sweep_l2_h16.log"
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
