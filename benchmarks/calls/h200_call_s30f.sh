#!/usr/bin/env bash
# Session 30, seventh call (an H100): the suite's bench of issue 7's bf16 rows (T=1 and prefill, H=128) and
# fp8_ds_mla's, with the tail split and the wait on (the defaults from this session on), against FlashInfer in the
# same process; then gpu_correctness.py's tail cases under the runtime's own rules.
#   bash benchmarks/calls/h200_call_s30f.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
SPARSEMLA_TAIL_SPLIT=1 SPARSEMLA_PDL_WAIT=1 timeout 300 python3 -m sparsemla.cli bench --formats bf16,fp8_ds_mla \
  --tokens 1,4 --heads 128 --out "$OUT/bench_defaults" > "$OUT/bench_defaults.log" 2>&1
echo "== bench rc=$?"; grep "^| " "$OUT/bench_defaults.log" | sort -u | cut -c1-120
SPARSEMLA_TAIL_SPLIT=1 SPARSEMLA_PDL_WAIT=1 timeout 100 python3 benchmarks/gpu_correctness.py tail auto576 > "$OUT/gpu_correctness_tail.log" 2>&1
echo "== gpu_correctness tail rc=$?"; tail -1 "$OUT/gpu_correctness_tail.log"
pack_out
