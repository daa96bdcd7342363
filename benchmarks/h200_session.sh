#!/usr/bin/env bash
# Session 23, call 4 (issue 7): with the combine's new PDL rule and reservation (runtime/triton_backend._pdl,
# _combine_reserve: a reservation only where the combine's programs outnumber the free SMs, after call 3),
# gluon_select's narrow candidates for the T=1 H=128 buckets (16-head programs with 8-32 splits, one stage,
# 32-head programs: 128-program grids now take PDL), merged --only-faster into a copy of the tables, and every
# T=1 and T=4 suite row benched beside FlashInfer with it. Merge $OUT/select_t1_h128/NVIDIA_H200/sparse_mla.json
# with benchmarks/merge_tuned.py --only-faster and the bench JSONs with benchmarks/merge_bench.py afterwards.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
select_into select_t1_h128 200 --narrow --heads 128 --tokens 1
merged_tables select_t1_h128
bench_within 320 "$TABLES" "bf16 16,32,64,128 1,4" "bf16_nope 16,32,64,128 1,4" "fp8 16,32,64,128 1,4" \
  "model1 16,32,64,128 1,4" "fp8_nope 16,32,64,128 1,4" "fp8_ds_mla 16,32,64,128 1,4"
pack_out
