#!/usr/bin/env bash
# Prepared at the end of session 23, not yet run (session 23's last call, 6, is at 9bf98e7): the two knobs for
# the small-T rows that are off in the runtime until timed (runtime/triton_backend._COMBINE_PARTS_FIRST, the
# combine's loads issued together; _STAGED_STORE, the narrow Gluon kernel's output through a stage), each and
# both against the shipped code on the T=1 and T=4 rows (benchmarks/calls/small_t_knobs.py; every variant is
# checked against the reference first). If one wins, turn it on in the runtime, re-bench those rows beside
# FlashInfer and merge them (benchmarks/merge_bench.py); the rest of the formats in the next call.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 420 python3 benchmarks/calls/small_t_knobs.py --tokens 1,4 --formats bf16,bf16_nope,fp8 > "$OUT/small_t_knobs.log" 2>&1
echo "== small_t_knobs bf16, NoPE, fp8 rc=$?"; sed -n '/^| format/,$p' "$OUT/small_t_knobs.log"
grep "^| " "$OUT/small_t_knobs.log" | sort -u | head -30; grep -i "error\|Traceback" "$OUT/small_t_knobs.log" | head -5
timeout 120 python3 benchmarks/calls/small_t_knobs.py --tokens 1 --heads 128,64 --formats model1,fp8_ds_mla \
  > "$OUT/small_t_knobs_2.log" 2>&1
echo "== small_t_knobs model1, fp8_ds_mla rc=$?"; grep "^| " "$OUT/small_t_knobs_2.log" | sort -u
pack_out
