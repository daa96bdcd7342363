#!/usr/bin/env bash
# Session 20, call 11 (about 3 minutes; the last of the session's device time): gluon_select.py's Gluon candidates
# (the shipped split count, half and double it) at T=4 for 128 heads, where the shipped 16 splits make 128 programs
# and half of them would take the PDL combine; merged --only-faster into a copy of the tables, those rows benched.
#   bash benchmarks/h200_session14.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
mkdir -p "$OUT/select_t4"
timeout 110 python3 benchmarks/gluon_select.py "$OUT/select_t4" --tokens 4 --heads 128 > "$OUT/gluon_select_t4.log" 2>&1
echo "== gluon_select T=4 H=128 rc=$?"; grep "T=\|written\|Error" "$OUT/gluon_select_t4.log" | cut -c30-300
TABLES=$(mktemp -d)
cp -r "$(python3 -c 'from sparsemla.gen.tuned_table import package_dir; print(package_dir())')"/. "$TABLES/"
if [ -f "$OUT/select_t4/NVIDIA_H200/sparse_mla.json" ]; then
  python3 benchmarks/merge_tuned.py "$OUT/select_t4/NVIDIA_H200/sparse_mla.json" "$TABLES/NVIDIA_H200/sparse_mla.json" \
    --only-faster > "$OUT/merge_t4.log" 2>&1
  echo "== merge rc=$?"; cut -c1-200 "$OUT/merge_t4.log"
  bench_within 80 "$TABLES" "bf16,bf16_nope,fp8,fp8_nope,fp8_ds_mla,model1 128 4"
fi
pack_out
