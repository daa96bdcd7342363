#!/usr/bin/env bash
# Prepared in session 36 for the next device time (after h200_call_s36f.sh, which benches the wide split-K rows on the
# H200): gather_probe.py (any sm90 card: does a T=1 tile of gathered rows land sooner with 8 or 16 gathering warps
# than with the narrow kernel's 4? compared in one process), then on the H200 only gluon_select.py at bf16 and bf16
# NoPE T=16 H=64 (the wide kernel with 4, 8 and 16 splits: call 3 of session 36 found 4 splits 1.016x and 1.023x
# against the shipped 8 on an H100), merged --only-faster into a copy of the tables, those rows benched against
# FlashInfer.
#   bash benchmarks/calls/h200_call_s37b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 150 python3 benchmarks/calls/gather_probe.py > "$OUT/gather_probe.log" 2>&1
echo "== gather_probe rc=$?"; grep "^|\|Error" "$OUT/gather_probe.log" | tail -9
if [[ "$gpu" == *H200* ]]; then
  select_into t16_h64 240 --tokens 16 --heads 64 --formats auto
  merged_tables t16_h64
  bench_within 150 "$TABLES" "bf16 64 16" "bf16_nope 64 16"
fi
pack_out
