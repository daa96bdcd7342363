#!/usr/bin/env bash
# Session 30, last call: the suite's bench of issue 7's bf16 rows at H=128 (T=1 and the prefill), with the
# session's new defaults (the wait for the previous kernel, the tail split), against FlashInfer in the same process.
#   bash benchmarks/calls/h200_call_s30h.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 -m sparsemla.cli bench --formats bf16 --tokens 1 --heads 128 --out "$OUT/bench_h128" \
  > "$OUT/bench_h128.log" 2>&1
echo "== bench rc=$?"; grep "^| " "$OUT/bench_h128.log" | sort -u | cut -c1-130
pack_out
