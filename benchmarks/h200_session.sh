#!/usr/bin/env bash
# Prepared at the end of session 21, not yet run (session 21's call 6, which this file held before, is at 7fe93c9):
# the two T=16 H=64 buckets call 6 did not reach before its time limit (fp8 with d_qk 576, model1), gluon_select's
# candidates (the shipped 8 splits, 4 with the PDL combine, 16) merged --only-faster into a copy of the tables and
# benched beside FlashInfer with it; the four suite rows left stale by call 1 (T=4 H=64 for fp8, fp8 NoPE,
# fp8_ds_mla and model1, whose entries changed there but were not benched); then the paging benchmark without
# its sweep (issue 4's rows, the default).
# Merge $OUT/select*/NVIDIA_H200/sparse_mla.json with benchmarks/merge_tuned.py --only-faster and the bench JSONs
# with benchmarks/merge_bench.py afterwards.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
select_into select_t16_h64 120 --tokens 16 --heads 64 --formats fp8_e4m3-qk576,model1
merged_tables select_t16_h64
bench_within 200 "$TABLES" "fp8,model1 64 16" "fp8,fp8_nope,fp8_ds_mla,model1 64 4"
paging 200
pack_out
