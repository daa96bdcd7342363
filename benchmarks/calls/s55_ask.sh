#!/usr/bin/env bash
# The next device call (prepared in session 54): on the H200, the prepared call (benchmarks/h200_session.sh); on
# an H100, first benchmarks/calls/ref_pairs.py (the H200's 64-head programs for 32-head specs against the H100
# table's entries, which its tuning could not seed), then the NoPE formats the H100 table lacks (bf16_nope and
# fp8_nope, resuming from benchmarks/results/tune_h100_nope/ when a call was cut); anything else stops.
#   H100_LIMIT=400 bash benchmarks/calls/s55_ask.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "== $gpu"
case "$gpu" in
  *H200*) bash benchmarks/h200_session.sh ;;
  *H100*) PAIRS_LIMIT=${PAIRS_LIMIT:-150} bash benchmarks/calls/s54_pairs.sh
          RUN=benchmarks/results/tune_h100_nope FORMATS=bf16_nope,fp8_nope LIMIT=${H100_LIMIT:-400} \
            bash benchmarks/h200_tune.sh
          cp -r benchmarks/results/tune_h100_nope "$OUT/" ;;
  *) echo "neither the H200 nor an H100: stopped" ;;
esac
