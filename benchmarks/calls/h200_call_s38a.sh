#!/usr/bin/env bash
# Ran in session 39 (call 1, an H100); it needs commit 25d5c84 (GluonKernel.pairs, measured slower and removed).
# Session 38 (any sm90 card): two units a program (Config num_warps=16, GluonKernel.pairs), whose computing groups
# take turns on the tensor cores, against the shipped one-stage narrow fp8 entries (two programs an SM, whose S^T
# chains overlap: session 27's profile had fp8_e4m3 T=256 H=16's S^T at 2664 cycles a tile against model1's 838,
# where C bounds the tile and the computing groups rarely meet). In order of need (device time is short; each log is
# under $OUT as it is written): 1) both configs checked and timed in rotating orders (t1_configs.py) at T=256 H=16,
# in the four fp8 formats; 2) gpu_correctness.py's pairs cases (T=7: the last program's second unit empty); 3) the
# pairs kernel with turns at S^T only and with none (gluon_variant.py, in order); 4) the profile of both configs at
# fp8 T=256 H=16.
# FORMATS (default fp8,fp8_nope,fp8_ds_mla,model1) narrows step 1.
#   bash benchmarks/calls/h200_call_s38a.sh [FORMATS]   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 200 python3 benchmarks/calls/t1_configs.py --formats "${1:-fp8,fp8_nope,fp8_ds_mla,model1}" --heads 16 \
  --tokens 256 --candidates 16:1:1:16 --reps 3 > "$OUT/pairs_ab.log" 2>&1
echo "== pairs A/B rc=$?"; grep "^|" "$OUT/pairs_ab.log" | tail -12
timeout 100 python3 benchmarks/gpu_correctness.py pairs > "$OUT/correct_pairs.log" 2>&1
echo "== gpu_correctness pairs rc=$? ok=$(grep -c ' ok$' "$OUT/correct_pairs.log")"
grep -E "FAIL|Error|error:" "$OUT/correct_pairs.log" | head -5; tail -1 "$OUT/correct_pairs.log"
timeout 100 python3 benchmarks/calls/gluon_variant.py turns=s turns=none \
  --rows fp8:16:256:h16.s1.w16.st1,model1:16:256:h16.s1.w16.st1 > "$OUT/turns.log" 2>&1
echo "== turns rc=$?"; grep "^|" "$OUT/turns.log" | tail -3
timeout 100 python3 benchmarks/calls/gluon_timeline.py --rows fp8:16:256:h16.s1.w16.st1,fp8:16:256:h16.s1.w8.st1 \
  > "$OUT/timeline.log" 2>&1
echo "== timeline rc=$?"; grep -E "^fp8|S's wgmma|softmax to|stage to free|wait for|free to ready|turn" "$OUT/timeline.log"
pack_out
