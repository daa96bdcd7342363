#!/usr/bin/env bash
# Session 27: the follow-up of h200_session.sh's prefill_out.py, with the runtime's rules (persistent_for, _staged_out)
# set to its winner and committed: the four bf16 prefill rows (T=4096, H=64 and 128, with rope and NoPE) benched
# beside FlashInfer as the suite benches them, for benchmarks/merge_bench.py. Then stream_check.py (the per-stream
# buffers on the GPU), in case the tuning call does not run.
#   bash benchmarks/calls/h200_call_prefill_rows.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
for f in bf16 bf16_nope; do
  timeout 200 python3 -m sparsemla.cli bench --no-prefill --formats $f --tokens 4096 --heads 64,128 \
    --out "$OUT/bench_$f" > "$OUT/bench_$f.log" 2>&1
  echo "== bench $f rc=$?"; grep "^| $f " "$OUT/bench_$f.log" | sort -u | cut -c1-110
done
timeout 90 python3 benchmarks/calls/stream_check.py > "$OUT/stream_check.log" 2>&1
echo "== stream_check rc=$?"; grep "FAIL\|Error\|^|\|stream_check:" "$OUT/stream_check.log" | cut -c1-160
pack_out
