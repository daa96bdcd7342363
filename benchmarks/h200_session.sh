#!/usr/bin/env bash
# Session 21, call 4 (call 3 is at 7d0e5c8-): the fused combine where the last call's suite rows were mixed.
# fp8 NoPE T=64 H=32 (64-head programs, 32 heads masked) ran 51.6 us with FUSED against 46.4 in an older run:
# an A/B of FUSED in the 2-split rows of that format and bf16 NoPE at T=64; then gluon_select at T=32 H=128 for
# fp8 NoPE (shipped 4 splits; 2 splits now take FUSED), merged into a copy of the tables, and those rows benched
# beside FlashInfer with it.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 120 python3 benchmarks/calls/fused_combine.py --formats fp8_nope,bf16_nope,fp8 --heads 32,64 --tokens 64 \
  > "$OUT/fused_combine.log" 2>&1
echo "== fused_combine rc=$?"; sed -n '/^| format/,$p' "$OUT/fused_combine.log"; grep -i "error\|Traceback" "$OUT/fused_combine.log" | head -5
select_into select_t32 90 --tokens 32 --heads 128 --formats fp8_e4m3-qk512
merged_tables select_t32
bench_within 120 "$TABLES" "fp8_nope 128 32" "fp8_nope 32 64"
pack_out
