#!/usr/bin/env bash
# Session 20, call 10 (about 5 minutes): with the combine a programmatic dependent of grids of at most half the SMs,
# gluon_select.py's narrow candidates at T=1 for 64 heads (call 9: bf16 16-head programs with 16 splits, 64 programs,
# beat the shipped 32 splits), merged --only-faster into a copy of the package's tables, then those rows benched
# beside FlashInfer with that copy.
#   bash benchmarks/h200_session13.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
mkdir -p "$OUT/select_t1"
timeout 240 python3 benchmarks/gluon_select.py "$OUT/select_t1" --narrow --tokens 1 --heads 64 \
  > "$OUT/gluon_select_t1.log" 2>&1
echo "== gluon_select T=1 H=64 rc=$?"; grep "T=\|written\|Error" "$OUT/gluon_select_t1.log" | cut -c30-400
TABLES=$(mktemp -d)
cp -r "$(python3 -c 'from sparsemla.gen.tuned_table import package_dir; print(package_dir())')"/. "$TABLES/"
if [ -f "$OUT/select_t1/NVIDIA_H200/sparse_mla.json" ]; then
  python3 benchmarks/merge_tuned.py "$OUT/select_t1/NVIDIA_H200/sparse_mla.json" "$TABLES/NVIDIA_H200/sparse_mla.json" \
    --only-faster > "$OUT/merge_t1.log" 2>&1
  echo "== merge rc=$?"; cat "$OUT/merge_t1.log" | cut -c1-200
fi
bench_within 220 "$TABLES" "bf16,bf16_nope,fp8,fp8_nope,fp8_ds_mla,model1 64 1"
pack_out
