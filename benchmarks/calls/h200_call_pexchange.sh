#!/usr/bin/env bash
# Measure Config.p_exchange (issue 7) on the H200. First bf16 GPU correctness of every format x
# feature with it off and on (benchmarks/gpu_correctness.py), then the bf16 / fp8 / ds_mla / model1
# rows at H = 64 and 128 with it off and on for the h64 w8 configs the tuned table uses (sweep.py
# config h,n,s,w,st,pf,px; s 0 = the default's split count). If it wins: add it to the search
# space (gen/search_space.py) and re-tune those rows. $OUT is packed into one archive.
set -u
export PYTHONUNBUFFERED=1
timeout ${CHECK_LIMIT:-200} python3 benchmarks/gpu_correctness.py 2>&1 | grep -v Warn > "$OUT/gpu_correctness.log"
echo "== correctness rc=$?"; grep -c " ok" "$OUT/gpu_correctness.log"; grep "FAIL\|correctness" "$OUT/gpu_correctness.log"
timeout ${LIMIT:-330} python3 benchmarks/sweep.py \
  --rows bf16:16:128,bf16:128:128,bf16:128:64,bf16:256:128,fp8:128:128,fp8:16:128,fp8_ds_mla:128:128,model1:128:128 \
  --configs 64,64,0,8,1/64,64,0,8,1,0,1/64,64,0,8,2/64,64,0,8,2,0,1/64,64,1,8,2/64,64,1,8,2,0,1 \
  --out "$OUT/sweep_px" 2>&1 | grep -v Warn > "$OUT/sweep_px.log"
echo "== sweep rc=$?"; tail -n 48 "$OUT/sweep_px.log" | cut -c1-150
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
