# Steps shared by the H200 call scripts (sourced: `. benchmarks/h200_steps.sh`). Each writes under
# $OUT and prints a short summary; the full logs stay in $OUT.

check_tables() {  # stop the call (exit 3) when the installed package's H200 table is ignored: a template
  # changed after the table was stamped, so every step would measure default configs (session 18, call 6)
  python3 - <<'PY' || { echo "== the installed H200 tuned table is ignored: call stopped"; exit 3; }
import sys
from sparsemla.gen.tuned_table import load_table, package_dir
n = len(load_table(package_dir() / "NVIDIA_H200" / "sparse_mla.json"))
print(f"== installed H200 tuned table: {n} specs accepted")
sys.exit(0 if n else 1)
PY
}

h200_only() {  # print the card; stop the call (exit 0) on any other card, whose times the H200's tables must not
  # take; then check_tables
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
  [[ "$gpu" == *H200* ]] || { echo "== not the H200: stopped"; exit 0; }
  check_tables
}

raw_rows() {  # NAME LIMIT_S ARGS...: benchmarks/calls/raw_rows.py ARGS into $OUT/NAME.log, its table printed
  local name=$1 limit=$2
  shift 2
  timeout "$limit" python3 benchmarks/calls/raw_rows.py "$@" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$?"; grep "^|\|correct\|Error\|error" "$OUT/$name.log" | tail -16
}

bench_rows() {  # FORMAT HEADS TOKENS LIMIT_S [TUNED_DIR]: one `sparsemla bench` run of those rows, into
  # $OUT/bench_FORMAT_hHEADS_tTOKENS (named by its tokens too: two runs of one format and head count must
  # not overwrite each other's results, as call 2 of session 18 did)
  local name="bench_$1_h$2_t${3//,/_}"
  env ${5:+SPARSEMLA_TUNED_DIR="$5"} timeout "$4" python3 -m sparsemla.cli bench --no-prefill --formats "$1" \
    --tokens "$3" --heads "$2" --out "$OUT/$name" > "$OUT/$name.log" 2>&1
  echo "== bench $1 H=$2 rc=$?"; grep "^| $1 " "$OUT/$name.log" | sort -u | cut -c1-100
}

bench_within() {  # LIMIT_S TUNED_DIR "FORMAT HEADS TOKENS"...: bench_rows of each row in turn while at
  # least 20 s of LIMIT_S are left (one run per row, so a cut-off keeps the rows before it);
  # TUNED_DIR "" reads the installed tables
  local end=$(( $(date +%s) + $1 )) tuned=$2 row left
  shift 2
  for row in "$@"; do
    left=$(( end - $(date +%s) )); [ $left -lt 20 ] && break
    bench_rows $row $left "$tuned"
  done
}

paging() {  # LIMIT_S [NAME]: the paging benchmark, without its config sweep, into $OUT/NAME (default paging)
  local name=${2:-paging}
  mkdir -p "$OUT/$name"
  timeout "$1" python3 benchmarks/bench_paging.py --no-sweep --out "$OUT/$name" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$?"; grep -i "touched\|error\|Traceback" "$OUT/$name.log" | grep -v "^|" | cut -c1-150
}

find_ncu() {  # sets ncu to Nsight Compute's command line tool and prints it; fails where the machine has none
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
  echo "== ncu: ${ncu:-none}"
  [ -n "$ncu" ]
}

pack_now() {  # $OUT so far as one archive beside it ($OUT/results.tgz), so a call cut off later keeps what came before
  tar -C "$OUT" --exclude=results.tgz -czf /tmp/results.tgz . && mv /tmp/results.tgz "$OUT/"
}

pack_out() {  # $OUT as one archive: the device sends back files, not folders (pack_now's, not nested in a new one)
  pack_now && find "$OUT" -mindepth 1 -maxdepth 1 ! -name results.tgz -exec rm -rf {} +
}

select_into() {  # NAME LIMIT_S ARGS...: one benchmarks/gluon_select.py run (ARGS) into $OUT/NAME, its winners printed
  local name=$1 limit=$2
  shift 2
  mkdir -p "$OUT/$name"
  timeout "$limit" python3 benchmarks/gluon_select.py "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "== gluon_select $name rc=$?"; grep " -> " "$OUT/$name.log" | sed 's/^sparse_mla-sm90-//' | cut -c1-220
}

merged_tables() {  # NAME...: sets TABLES to a copy of the package's tuned tables with the tables of the select_into
  # runs NAME merged --only-faster (bench_within "$TABLES" ... then measures with them)
  TABLES=$(mktemp -d)
  cp -r "$(python3 -c 'from sparsemla.gen.tuned_table import package_dir; print(package_dir())')"/. "$TABLES/"
  local name
  for name in "$@"; do
    [ -f "$OUT/$name/NVIDIA_H200/sparse_mla.json" ] || continue
    python3 benchmarks/merge_tuned.py "$OUT/$name/NVIDIA_H200/sparse_mla.json" "$TABLES/NVIDIA_H200/sparse_mla.json" \
      --only-faster > "$OUT/merge_$name.log" 2>&1
    echo "== merge $name rc=$?"; sed 's/^sparse_mla-sm90-//' "$OUT/merge_$name.log" | cut -c1-200
  done
}
