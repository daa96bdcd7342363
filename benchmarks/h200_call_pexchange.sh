#!/usr/bin/env bash
# Measure the P-exchange experiment (issue 7) on the H200. First, on a branch:
#   git apply benchmarks/results/session5/p_exchange_experiment.patch
# then run this: bf16 / fp8 rows at H = 64 and 128, p_exchange off and on for the h64 w8 configs
# the tuned table uses (sweep.py config h,n,s,w,st,pf,px; s 0 = the default's split count).
set -u
export PYTHONUNBUFFERED=1
timeout ${LIMIT:-400} python3 benchmarks/sweep.py \
  --rows bf16:16:128,bf16:128:128,bf16:128:64,bf16:256:128,fp8:128:128,fp8:16:128,bf16_nope:128:128 \
  --configs 64,64,0,8,1/64,64,0,8,1,0,1/64,64,0,8,2/64,64,0,8,2,0,1/64,64,0,8,3,0,1/64,64,1,8,2/64,64,1,8,2,0,1 \
  --out "$OUT/sweep_px.json" 2>&1 | grep -v Warn | tail -n 60 | tee "$OUT/sweep_px.log" | tail -n 30
