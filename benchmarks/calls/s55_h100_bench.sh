#!/usr/bin/env bash
# Session 55's second device call: on the H200, the prepared call (benchmarks/h200_session.sh); on an H100, the
# bench suite through the installed package's own tables (tuned/NVIDIA_H100_80GB_HBM3 since session 54), one run
# per format so a cut-off run loses only its own rows, packed into $OUT/bench.tgz; merge with benchmarks/merge_bench.py
# --table tuned/NVIDIA_H100_80GB_HBM3/sparse_mla.json into benchmarks/results/NVIDIA_H100_80GB_HBM3.
#   FORMATS=bf16,fp8 bash benchmarks/calls/s55_h100_bench.sh
#   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "== $gpu"
case "$gpu" in
  *H200*) bash benchmarks/h200_session.sh ;;
  *H100*) for f in $(echo "${FORMATS:-bf16,fp8,fp8_ds_mla,model1,bf16_nope,fp8_nope}" | tr , ' '); do
            timeout ${BENCH_LIMIT:-120} python3 -m sparsemla.cli bench --formats $f --out "$OUT/bench_$f" 2>&1 \
              | grep -v Warn > "$OUT/bench_$f.log"
            echo "== bench $f rc=${PIPESTATUS[0]}"; tail -n 3 "$OUT/bench_$f.log" | cut -c1-200
          done
          # a call returns at most 8 files: one archive
          tar -C "$OUT" -czf /tmp/bench.tgz . && rm -rf "$OUT"/* && mv /tmp/bench.tgz "$OUT/" ;;
  *) echo "neither the H200 nor an H100: stopped" ;;
esac
