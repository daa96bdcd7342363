#!/usr/bin/env bash
# Prepared in session 42 and run as its call 15 at commit 621f5db, which it needs (GluonKernel.raw with split-K, its
# partials in float32 for the combine kernel, and the runtime's rule taking every 16-head Gluon config with an fp8_e4m3
# cache: correct, slower at T <= 64, measured and removed). gpu_correctness.py's narrow and
# empty-split Gluon cases for the fp8_e4m3 formats, then raw_rows.py at the split-K rows (T=1, 16, 64 with 16 heads,
# the H200 table's configs: 32, 8 and 2 splits) against the dequantizing kernel.
#   bash benchmarks/calls/h200_call_s42f.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
for cases in narrow empty; do
  timeout 150 python3 benchmarks/gpu_correctness.py fp8_576 fp8_nope512 $cases > "$OUT/gpu_correctness_$cases.log" 2>&1
  echo "== gpu_correctness fp8 $cases rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_$cases.log"
  grep -i "fail\|error" "$OUT/gpu_correctness_$cases.log" | head -12
done
raw_rows raw_rows_splits 110 --tokens 1,16,64 --no-h32
