#!/usr/bin/env bash
# Session 24, call 4 (issue 7): the persistent wide kernel by the runtime's rule (triton_backend._persistent: bf16
# cache with rope, no split-K, at least 16 rounds of units; call 3: 1.03-1.04x at prefill sizes). The bf16 prefill
# rows (T=4096, H=64 and 128) benched beside FlashInfer three times in a row: as shipped now (persistent), with
# SPARSEMLA_PERSISTENT=0 (the control), and as shipped again. Merge the first with benchmarks/merge_bench.py.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
for run in persistent_1 control persistent_2; do
  env $([ $run = control ] && echo SPARSEMLA_PERSISTENT=0) timeout 200 python3 -m sparsemla.cli bench --no-prefill \
    --formats bf16 --tokens 4096 --heads 64,128 --out "$OUT/$run" > "$OUT/$run.log" 2>&1
  echo "== $run rc=$?"; grep "^| bf16 " "$OUT/$run.log" | sort -u | cut -c1-100
done
pack_out
