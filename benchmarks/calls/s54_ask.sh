#!/usr/bin/env bash
# Session 54's device call: on the H200, the prepared call (benchmarks/h200_session.sh); on an H100, a re-run
# with the fixed tuner of the five bf16 studies whose H100 winners differed from the H200 table's config
# (benchmarks/results/tune_h100/README.md), in a fresh folder so the H200's configs are the seeds again and
# must be measured next to the H100's candidates; anything else stops.
#   H100_LIMIT=90 bash benchmarks/calls/s54_ask.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "== $gpu"
case "$gpu" in
  *H200*) bash benchmarks/h200_session.sh ;;
  *H100*) for study in "128 64" "64 128" "32 16,128" "16 4"; do
            set -- $study
            RUN=benchmarks/results/tune_h100_recheck FORMATS=bf16 LIMIT=${H100_LIMIT:-90} \
              TUNE_ARGS="--heads $1 --tokens $2" bash benchmarks/h200_tune.sh
          done ;;
  *) echo "neither the H200 nor an H100: stopped" ;;
esac
