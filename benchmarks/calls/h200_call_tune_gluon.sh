#!/usr/bin/env bash
# Prepared in session 25 (no device time then), not yet run: the tuner with the Gluon kernel in its space
# (Config.gluon searched on sm90, gen/tune.gluon_seeds) on the H200, as a GPU without a table of its own
# (--gpu NVIDIA_TUNE_CHECK): its studies are seeded with the H200 table's entries (the arch's reference part),
# then the default, split and Gluon seeds, every trial checked against the reference on poisoned inputs.
# What it shows: that Gluon trials run through the tuner (compile constraint, parallel JIT warm-up, the
# measurer's check), and how its winners compare with the shipped entries (a winner within ~2% of its seed is
# the same config re-measured). Its table stays under $OUT (never merged by this call).
# Session 27: two studies instead of three (model1 H=64 T=16 dropped). Session 28: ready_fence and stream_check.py
# ran in call 1 (h200_call_s28a.sh) and left this call; each study 120 s, 8 trials.
#   bash benchmarks/calls/h200_call_tune_gluon.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
mkdir -p "$OUT/tables"
for row in "fp8 16 256" "bf16 128 1"; do
  set -- $row
  timeout 120 python3 -m sparsemla.cli tune --formats "$1" --heads "$2" --tokens "$3" --trials 8 --parallel 6 \
    --gpu NVIDIA_TUNE_CHECK --out "$OUT/tables" --storage "$OUT/tune.journal" > "$OUT/tune_$1_h$2_t$3.log" 2>&1
  echo "== tune $1 H=$2 T=$3 rc=$?"; grep -c "us |" "$OUT/tune_$1_h$2_t$3.log"; tail -2 "$OUT/tune_$1_h$2_t$3.log" | cut -c1-200
done
python3 - "$OUT/tables/NVIDIA_TUNE_CHECK/sparse_mla.json" <<'PY'
import sys
from sparsemla.gen.spec import config_label
from sparsemla.gen.tuned_table import load_table, package_dir
new = load_table(sys.argv[1])
shipped = load_table(package_dir() / "NVIDIA_H200" / "sparse_mla.json")
print("| spec | T | tuned here | us | shipped | us |\n|---|---|---|---|---|---|")
for key, buckets in sorted(new.items()):
    for b, e in sorted(buckets.items()):
        s = shipped.get(key, {}).get(b)
        print(f"| {key} | {b} | {config_label(e.config)} | {e.time_us:.2f} | "
              f"{config_label(s.config) if s else '-'} | {s.time_us if s and s.time_us else float('nan'):.2f} |")
PY
pack_out
