#!/usr/bin/env bash
# Session 53's device call: on the H200, the prepared call (benchmarks/h200_session.sh); on an H100, which
# is what the H200 kind mostly brings, a share of tuning that card's own table (bf16 first; the journal and
# the partial table resume from benchmarks/results/tune_h100/, brought back from $OUT between calls);
# anything else stops.
#   H100_LIMIT=280 bash benchmarks/calls/s53_ask.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "== $gpu"
case "$gpu" in
  *H200*) bash benchmarks/h200_session.sh ;;
  *H100*) RUN=benchmarks/results/tune_h100 FORMATS=${H100_FORMATS:-bf16} LIMIT=${H100_LIMIT:-280} \
            bash benchmarks/h200_tune.sh ;;
  *) echo "neither the H200 nor an H100: stopped" ;;
esac
