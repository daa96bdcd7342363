#!/usr/bin/env bash
# Measure Config.p_exchange (issue 7) on the H200: bf16 / fp8 rows at H = 64 and 128, p_exchange
# off and on for the h64 w8 configs the tuned table uses (sweep.py config h,n,s,w,st,pf,px; s 0 =
# the default's split count). If it wins: add it to the search space (gen/search_space.py) and
# re-tune the H >= 64 rows.
set -u
export PYTHONUNBUFFERED=1
timeout ${LIMIT:-400} python3 benchmarks/sweep.py \
  --rows bf16:16:128,bf16:128:128,bf16:128:64,bf16:256:128,fp8:128:128,fp8:16:128,fp8_ds_mla:128:128,model1:128:128 \
  --configs 64,64,0,8,1/64,64,0,8,1,0,1/64,64,0,8,2/64,64,0,8,2,0,1/64,64,0,8,3,0,1/64,64,1,8,2/64,64,1,8,2,0,1 \
  --out "$OUT/sweep_px" 2>&1 | grep -v Warn | tail -n 60 | tee "$OUT/sweep_px.log" | tail -n 30
