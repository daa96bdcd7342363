#!/usr/bin/env bash
# Session 14's fifth device call on the H200, for issue 7: bf16 (576 and NoPE) at 16 heads, T=128, with
# the narrow kernel unsplit (one wave of 128 programs; call 1 did not try one split there), and its
# bench rows beside FlashInfer.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 45 python3 benchmarks/gluon_select.py "$OUT/tuned" --narrow --formats auto --heads 16 --tokens 128 \
  > "$OUT/gluon_select_h16_t128.log" 2>&1
echo "== gluon_select rc=$?"; grep "^sparse\|entries\|winner\|Error" "$OUT/gluon_select_h16_t128.log" \
  | sed 's/sparse_mla-sm90-//; s/-k2048-\(p[0-9]*\)-qbf16-cbf16/ \1/; s/(do_bench.*//; s/ n64//g; s/ st2//g' | cut -c1-200
bench_within 50 "$OUT/tuned" "bf16 16 128" "bf16_nope 16 128"
pack_out
