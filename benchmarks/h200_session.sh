#!/usr/bin/env bash
# Session 16's fifth device call on the H200, for issue 7: the narrow kernel (two stages, one or two
# dequantizing groups, and one stage) for the fp8 formats at 16 heads and T=4, 16 (only T >= 64 had been
# tried), then those rows benched with the winners overlaid on the installed table.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
mkdir -p "$OUT/select5"
timeout 190 python3 benchmarks/gluon_select.py "$OUT/select5" --narrow --heads 16 --tokens 4,16 \
  --formats fp8_e4m3,fp8_ds_mla,model1 > "$OUT/gluon_select5.log" 2>&1
echo "== gluon_select rc=$?"; grep "T=\|written\|winner" "$OUT/gluon_select5.log" | cut -c1-330
bench_within 110 "$OUT/select5" "fp8 16 4,16" "fp8_ds_mla 16 4,16" "model1 16 4,16" "fp8_nope 16 4,16"
pack_out
