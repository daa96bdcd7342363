#!/usr/bin/env bash
# Session 24, call 2 (issue 7): the combine's PARTS_FIRST by the runtime's new rule (triton_backend._parts_first:
# where the combine's grid has at most one program per SM; call 1, benchmarks/results/session24/README.md), and
# STAGED_STORE removed. The narrow Gluon cases of gpu_correctness for two formats (T=6: its 4-split cases at
# 16-32 heads take PARTS_FIRST), then every suite row it changes benched beside FlashInfer: T=1 at every head
# count, T=4 at 16 and 32 heads. Merge the bench JSONs with benchmarks/merge_bench.py afterwards.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 100 python3 benchmarks/gpu_correctness.py auto576 fp8_576 narrow > "$OUT/gpu_correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_narrow.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_narrow.log" | head -5; tail -1 "$OUT/gpu_correctness_narrow.log"
rows=()
for fmt in bf16 bf16_nope fp8 fp8_nope fp8_ds_mla model1; do rows+=("$fmt 16,32,64,128 1" "$fmt 16,32 4"); done
bench_within 420 "" "${rows[@]}"
pack_out
