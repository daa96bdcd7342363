#!/usr/bin/env bash
# Session 23, call 5 (issue 7): the narrow cases of gpu_correctness.py that call 3 did not reach (fp8 NoPE,
# fp8_ds_mla, model1: 4-split grids take PDL and a reservation), then gluon_select's narrow candidates for the
# T=4 H=32 and T=1 H=64 buckets with the combine's PDL rule and reservation (128-program narrow grids now take
# PDL), merged --only-faster into a copy of the tables, and those rows benched beside FlashInfer with it.
# Merge $OUT/select_*/NVIDIA_H200/sparse_mla.json with benchmarks/merge_tuned.py --only-faster and the bench
# JSONs with benchmarks/merge_bench.py afterwards.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 100 python3 benchmarks/gpu_correctness.py fp8_nope512 ds_mla model1_p64 narrow > "$OUT/gpu_correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_narrow.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_narrow.log" | head -5; tail -1 "$OUT/gpu_correctness_narrow.log"
select_into select_t4_h32 130 --narrow --heads 32 --tokens 4
select_into select_t1_h64 130 --narrow --heads 64 --tokens 1
merged_tables select_t4_h32 select_t1_h64
bench_within 170 "$TABLES" "bf16,bf16_nope,fp8 32 4" "fp8_nope,fp8_ds_mla,model1 32 4" "bf16,bf16_nope,fp8 64 1" \
  "fp8_nope,fp8_ds_mla,model1 64 1"
pack_out
