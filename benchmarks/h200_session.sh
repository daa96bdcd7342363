#!/usr/bin/env bash
# The next device call on the H200 (planned in session 10): the p_exchange twins of the shipped fp8
# (with rope) H=128 T=128/256 config, which the tuner's studies never measured (session 10 call 7:
# their seeds were enqueued in session 7, so a resumed study does not add them), timed next to the
# shipped config with benchmarks/sweep.py (do_bench, same process). fp8_nope H=128 gained 7-8% at
# T >= 64 from p_exchange in session 10. If a twin wins, re-tune those buckets in a fresh journal
# (h200_tune.sh with another storage) so the table's entry carries a tuner measurement.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 300 python3 benchmarks/sweep.py --rows fp8:128:128,fp8:256:128 \
  --configs 64,64,1,8,2,0,0,2/64,64,1,8,2,0,1,2/64,64,1,8,2,0,1,0 --out "$OUT" \
  > "$OUT/sweep_fp8_h128.log" 2>&1
echo "== sweep rc=$?"; grep -v Warn "$OUT/sweep_fp8_h128.log" | tail -n 12
pack_out
