#!/usr/bin/env bash
# Prepared in session 43. Any sm90 card with Nsight Compute's counters: one launch of GluonKernel.raw with an fp8_ds_mla
# cache (T=256 H=16, an L2-resident 16K-slot pool; benchmarks/calls/raw_once.py): ncu's throughput, warp-state and
# scheduler sections and its stall samples by SASS line (CSV), to find what group M waits on.
#   bash benchmarks/calls/h200_call_s43b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
find_ncu || exit 0
sections="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats"
timeout 200 "$ncu" --clock-control none -k regex:sparse_mla_fwd_gluon --launch-skip 1 --launch-count 1 $sections \
  --section SourceCounters -o /tmp/ds python3 benchmarks/calls/raw_once.py "$@" > /tmp/ds.run 2>&1
echo "== ncu rc=$?"; tail -3 /tmp/ds.run
"$ncu" --import /tmp/ds.ncu-rep --print-details all > "$OUT/ncu_ds.txt" 2>&1
grep -i "Duration\|Issue Slots Busy\|Warp Cycles Per Issued\|No Eligible\|Stall" "$OUT/ncu_ds.txt" | head -24
"$ncu" --import /tmp/ds.ncu-rep --page source --csv --print-source sass > "$OUT/ncu_ds_sass.csv" 2>&1
echo "== sass csv: $(wc -l < "$OUT/ncu_ds_sass.csv") lines"
