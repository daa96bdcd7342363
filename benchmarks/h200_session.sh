#!/usr/bin/env bash
# Session 14's third device call on the H200, for issue 7: the bf16 rows.
#  1. gluon_select.py (wide kernel) for bf16 NoPE (auto, d_qk 512) at 64 and 128 heads: the Gluon
#     kernel runs d_qk 512 since session 13, but these entries were never put against it;
#  2. gluon_select.py --narrow for bf16 (576 and NoPE) at 16 and 32 heads: T=1..16, and 32 heads at
#     T=64/128 again with the 16-head programs and one split;
#  3. the bench rows of bf16 NoPE (every head count) and bf16 at 16 and 32 heads, beside FlashInfer.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
select_step() {  # NAME LIMIT_S ARGS...: one gluon_select.py run into $OUT/tuned
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 benchmarks/gluon_select.py "$OUT/tuned" "$@" > "$OUT/gluon_select_$name.log" 2>&1
  echo "== gluon_select $name rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_$name.log" \
    | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//; s/ n64//g; s/ st2//g' | cut -c1-200
}
select_step nope_wide 100 --formats auto-qk512 --heads 128,64
select_step narrow_low 120 --narrow --formats auto --heads 16,32 --tokens 1,4,16
select_step narrow_h32 70 --narrow --formats auto --heads 32 --tokens 64,128
bench_within 230 "$OUT/tuned" "bf16_nope 128 1,4,16,32,64,128,256,4096" "bf16_nope 64 1,4,16,64,128,256,4096" \
  "bf16 16 1,4,16,64,128,256" "bf16 32 1,4,16,64,128,256" "bf16_nope 16 1,4,16,64,128,256" "bf16_nope 32 1,4,16,64,128,256"
pack_out
