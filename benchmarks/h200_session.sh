#!/usr/bin/env bash
# Session 21, call 6 (call 5 is at b9ed8cc): T=16 H=64, the small-T buckets not re-selected since the combine
# became a programmatic dependent (session 20; 64-program grids take it): gluon_select's candidates (the
# shipped 8 splits, 4 and 16) in all six formats, merged --only-faster into a copy of the tables, and those rows
# beside FlashInfer with it (bf16 NoPE T=16 H=64 was 0.99x of FlashInfer).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
select_into select_t16_h64 150 --tokens 16 --heads 64
merged_tables select_t16_h64
bench_within 180 "$TABLES" "bf16,bf16_nope,fp8,fp8_nope,fp8_ds_mla,model1 64 16"
pack_out
