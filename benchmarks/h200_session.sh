#!/usr/bin/env bash
# Session 16's third device call on the H200, for issue 7: the 6 bench rows whose entries call 2
# changed (one-stage narrow at 16 heads, one split for bf16 T=128 H=16); 16-head programs at T=1 for 64
# and 128 heads put against the shipped entries (gluon_select --narrow), and those rows benched with the
# winners overlaid on the installed table.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
bench_within 190 "" "fp8 16 64,256" "fp8_ds_mla 16 64,256" "bf16 16 128" "bf16_nope 16 128"
mkdir -p "$OUT/select3"
timeout 170 python3 benchmarks/gluon_select.py "$OUT/select3" --narrow --heads 64,128 --tokens 1 \
  --formats auto,fp8_e4m3 > "$OUT/gluon_select3.log" 2>&1
echo "== gluon_select T=1 rc=$?"; grep "T=\|written\|winner" "$OUT/gluon_select3.log" | cut -c1-330
mv "$OUT/select3" "$OUT/select3_table" && mkdir -p "$OUT/t1" && cp -r "$OUT/select3_table/." "$OUT/t1/"
bench_within 120 "$OUT/t1" "bf16 64,128 1" "bf16_nope 64,128 1" "fp8 64,128 1" "fp8_nope 64,128 1"
pack_out
