#!/usr/bin/env bash
# Session 36, for a second try at the H200 (call 2 got an H100). On the H200: the suite's rows whose entries run the
# wide Gluon kernel with split-K merged by the combine kernel, benched against FlashInfer with its bfloat16 partials
# (as call 2 did on the H100), then the wide kernel's split counts at T=4 and 16 (t1_configs.py: 4-32 splits beside
# the shipped entry; its entries were tuned with float32 partials). On another card only the split counts, for more
# formats (the H200's table is not the card's).
#   bash benchmarks/calls/h200_call_s36d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
splits() {  # LIMIT_S FORMATS: t1_configs.py on the wide split-K rows at T=4 and 16 with 64 and 128 heads
  timeout "$1" python3 benchmarks/calls/t1_configs.py --formats "$2" --tokens 4,16 --heads 64,128 \
    --candidates 64:4:2,64:8:2,64:16:2,64:32:2 --reps 4 > "$OUT/splits_${2//,/_}.log" 2>&1
  echo "== t1_configs (wide splits) $2 rc=$?"; grep "^|\|Error" "$OUT/splits_${2//,/_}.log" | tail -34 | cut -c1-150
}
if [[ "$gpu" == *H200* ]]; then
  bench_within 330 "" "bf16 64,128 4,16" "bf16_nope 64,128 4,16" "fp8 32,64,128 1,4,16" "fp8_nope 32,64,128 1,4,16" \
    "model1 32,64,128 1,4,16" "fp8_ds_mla 32,64,128 1,4,16" "fp8_nope 32 64"
  splits 200 bf16,fp8
else
  splits 420 bf16,bf16_nope,fp8,model1
fi
pack_out
