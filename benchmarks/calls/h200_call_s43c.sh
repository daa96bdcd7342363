#!/usr/bin/env bash
# Prepared in session 43. Any sm90 card: GluonKernel.raw as shipped at this commit (fp8_e4m3 and fp8_ds_mla, the tile
# loop's buffer index an opaque 0): the Gluon narrow correctness cases of the three raw formats, raw_rows.py of each at
# T=128 and 256 with 16 heads (raw against the dequantizing kernel of the H200 table's config, one process), then the
# suite's fp8_ds_mla rows at T=128 and 256 with 16 heads benched against FlashInfer (which has no fp8_ds_mla path on
# sm90: our times only), into $OUT/bench_fp8_ds_mla_h16_t128_256 for the card's results.
#   bash benchmarks/calls/h200_call_s43c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
check_tables
timeout 200 python3 benchmarks/gpu_correctness.py fp8_576 fp8_nope512 ds_mla narrow \
  > "$OUT/gpu_correctness_narrow.log" 2>&1
echo "== gpu_correctness narrow rc=$?"; grep -c " ok" "$OUT/gpu_correctness_narrow.log"
grep -v " ok" "$OUT/gpu_correctness_narrow.log" | tail -12
raw_rows raw_rows 240 --formats fp8,fp8_nope,fp8_ds_mla --no-h32
bench_rows fp8_ds_mla 16 128,256 150
pack_out
