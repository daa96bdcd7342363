#!/usr/bin/env bash
# Session 23, call 3 (issue 7): the runtime's new PDL rule and shared-memory reservation for the combine
# (runtime/triton_backend._pdl, _combine_reserve). (1) The rows call 2 did not time (T=1 H=16, 32; T=4 H=16,
# 64) against PDL without a reservation (combine_place.py: the rule's pair is added). (2) gpu_correctness.py's
# narrow cases (their 4-split grids take PDL and a reservation). (3) The four rows the rule now launches
# with PDL (bf16 and bf16 NoPE at T=1 H=128 and T=4 H=32) benched beside FlashInfer.
# (Calls 1 and 2 are in benchmarks/results/session23/README.md; their scripts at 8d773fc and 97e9084.)
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 110 python3 benchmarks/calls/combine_place.py --tokens 1 --heads 32,16 --pairs 1:0 > "$OUT/combine_rule_t1.log" 2>&1
echo "== combine_place T=1 rc=$?"; grep "^| " "$OUT/combine_rule_t1.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_rule_t1.log" | head -5
timeout 110 python3 benchmarks/calls/combine_place.py --tokens 4 --heads 64,16 --pairs 1:0 > "$OUT/combine_rule_t4.log" 2>&1
echo "== combine_place T=4 rc=$?"; grep "^| " "$OUT/combine_rule_t4.log" | sort -u; grep -i "error\|Traceback" "$OUT/combine_rule_t4.log" | head -5
timeout 150 python3 benchmarks/gpu_correctness.py narrow > "$OUT/gpu_correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_narrow.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_narrow.log" | head -5; tail -1 "$OUT/gpu_correctness_narrow.log"
bench_within 180 "" "bf16 128 1,4" "bf16_nope 128 1,4" "bf16 32 1,4" "bf16_nope 32 1,4"
pack_out
