#!/usr/bin/env bash
# Prepared at the end of session 30, the call after benchmarks/h200_session.sh: the suite's bench, on an H200, of the
# fp8 formats' T=1 and T=4 rows at 64 and 128 heads, whose Gluon kernels now wait for the stream's previous kernel
# (GluonKernel.pdl_wait), against FlashInfer in the same process, for ../results/NVIDIA_H200.md (merge_bench.py).
#   bash benchmarks/calls/h200_call_s31b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 540 python3 -m sparsemla.cli bench --no-prefill --formats fp8,fp8_nope,fp8_ds_mla,model1 --tokens 1,4 \
  --heads 64,128 --out "$OUT/bench_fp8" > "$OUT/bench_fp8.log" 2>&1
echo "== bench rc=$?"; grep "^| " "$OUT/bench_fp8.log" | sort -u | cut -c1-120
pack_out
