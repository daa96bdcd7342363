#!/usr/bin/env bash
# Session 22, call 2: SPREAD (the template's split-K merge shared by the splits; runtime/triton_backend._spread).
# The split rows at T=1 first (issue 7's T=1 H=128 among them): benchmarks/calls/fused_combine.py times the
# combine kernel (PDL where the runtime's rule takes it) against SPREAD, each row checked against the reference
# with SPREAD before and after its graph replays; then gpu_correctness.py's SPREAD cases (sinks +-inf, LSE, -1
# rows, topk_length, masked heads, empty splits; every format); then T=4 and 16; then the T=1 suite rows beside
# FlashInfer with the provisional rule (one-wave grids with 4 or more splits).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
spread_ab() {  # NAME LIMIT_S TOKENS
  timeout "$2" python3 benchmarks/calls/fused_combine.py --modes kernel,spread --min-splits 4 --max-splits 32 \
    --tokens "$3" --budget $(( $2 - 40 )) > "$OUT/$1.log" 2>&1
  echo "== $1 rc=$?"; sed -n '/^| format/,$p' "$OUT/$1.log"; grep -i "error\|Traceback\|budget" "$OUT/$1.log" | head -5
}
spread_ab spread_t1 170 1
timeout 150 python3 benchmarks/gpu_correctness.py gluon spread > "$OUT/gpu_correctness_spread.log" 2>&1
echo "== gpu_correctness spread rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_spread.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_spread.log" | head -5; tail -1 "$OUT/gpu_correctness_spread.log"
spread_ab spread_t4_16 170 4,16
bench_within 90 "" "bf16,bf16_nope,fp8 128 1"
pack_out
