#!/usr/bin/env bash
# Never run (pairs lost in session 39, call 1); it needs commit 25d5c84 (GluonKernel.pairs, since removed).
# Prepared in session 38, to run after h200_call_s38a.sh if two units a program (Config num_warps=16,
# GluonKernel.pairs) won there; the H200 only (it stops at once on another card): gluon_select.py --narrow --pairs at
# T=64, 128 and 256 with 16 and 32 heads in the fp8 formats (each bucket's shipped entry against the pairs configs at
# its split counts), the winners merged --only-faster into a copy of the tables, and the H=16 rows at T=128 and 256
# benched against FlashInfer with them. Afterwards, here: benchmarks/merge_tuned.py of the selection into
# tuned/NVIDIA_H200/sparse_mla.json (--only-faster), and benchmarks/merge_bench.py of the bench runs into
# benchmarks/results/NVIDIA_H200.json.
#   bash benchmarks/calls/h200_call_s38b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
h200_only
select_into pairs 320 --narrow --pairs --formats fp8_e4m3,fp8_ds_mla,model1 --heads 16,32 --tokens 64,128,256
merged_tables pairs
bench_within 180 "$TABLES" "fp8 16 128,256" "fp8_nope 16 128,256" "fp8_ds_mla 16 128,256" "model1 16 128,256"
pack_out
