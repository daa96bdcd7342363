#!/usr/bin/env bash
# Session-5 device call: grid vs TPE (benchmarks/tune_compare.py), resuming
# benchmarks/results/tune_compare/compare.journal (its first two specs are done). $OUT is
# packed into one archive.
set -u
COMPARE_LIMIT=${COMPARE_LIMIT:-380} PARALLEL=12 bash benchmarks/h200_compare.sh
tar -C "$OUT" -czf /tmp/results.tgz . && rm -rf "$OUT"/* && mv /tmp/results.tgz "$OUT/"
