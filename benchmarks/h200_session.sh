#!/usr/bin/env bash
# Prepared at the end of session 20, not yet run (session 19's call 1, which this file held before, is at 31ae2ae):
# with the combine a programmatic dependent of Gluon grids that leave SMs free (runtime/triton_backend._pdl),
# 64-program configs won T=1 H=64 in all six formats and T=4 H=128 for bf16 and fp8_ds_mla (session 20, calls 10-11).
# The small-T buckets that call 11 did not reach: gluon_select.py's candidates at T=4 for the other 128-head specs and
# the 64-head ones, and its narrow candidates at T=1 and 4 for 16 and 32 heads, merged --only-faster into a copy of
# the package's tables; then those rows (and the two stale suite rows, bf16 and fp8_ds_mla T=4 H=128) benched beside
# FlashInfer with that copy. Merge $OUT/select*/NVIDIA_H200/sparse_mla.json with benchmarks/merge_tuned.py
# --only-faster and the bench JSONs with benchmarks/merge_bench.py afterwards.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
select_into select_t4_wide 150 --tokens 4 --heads 64,128 --formats fp8_e4m3,model1,fp8_ds_mla-qk576-v512-h64
select_into select_small_narrow 200 --narrow --tokens 1,4 --heads 16,32
merged_tables select_t4_wide select_small_narrow
bench_within 150 "$TABLES" "bf16,fp8,fp8_nope,fp8_ds_mla,model1 128 4" "bf16,bf16_nope,fp8,fp8_nope,fp8_ds_mla,model1 16,32 1,4"
pack_out
