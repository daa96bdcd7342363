#!/usr/bin/env bash
# Session 54's second device call: on the H200, the prepared call (benchmarks/h200_session.sh); on an H100,
# benchmarks/calls/ref_pairs.py: the H200's configs that the H100's tuning runs did not time (the entries' incumbents
# without a time: 64-head Gluon programs for 32-head specs) against the H100 table's entries; anything else stops.
#   bash benchmarks/calls/s54_pairs.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "== $gpu"
case "$gpu" in
  *H200*) bash benchmarks/h200_session.sh ;;
  *H100*) timeout ${PAIRS_LIMIT:-300} python3 benchmarks/calls/ref_pairs.py \
            tuned/NVIDIA_H100_80GB_HBM3/sparse_mla.json --rounds ${PAIRS_ROUNDS:-2} --out "$OUT/ref_pairs.json" \
            2>&1 | grep -v Warn | tee "$OUT/ref_pairs.log" | tail -n 20 ;;
  *) echo "neither the H200 nor an H100: stopped" ;;
esac
