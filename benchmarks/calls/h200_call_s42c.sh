#!/usr/bin/env bash
# Prepared in session 42. Any sm90 card with Nsight Compute's counters: as h200_call_s42b.sh, for proto_fp8_rega.py with
# ONE_BAR (the max down the keys with one barrier), fp8 and fp8_nope, with the stall samples by SASS line of each.
#   bash benchmarks/calls/h200_call_s42c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
find_ncu || exit 0
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters"
for fmt in fp8 fp8_nope; do
  name=rega_onebar_$fmt
  timeout 150 "$ncu" --clock-control none -k regex:proto_fp8 --launch-count 1 $sections -o "/tmp/$name" \
    python3 benchmarks/calls/proto_fp8_rega.py --plain-only --plain-slots 16384 --one-bar 1 --format $fmt \
    > "/tmp/$name.run" 2>&1
  echo "== $name rc=$?"; tail -2 "/tmp/$name.run"
  "$ncu" --import "/tmp/$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
  "$ncu" --import "/tmp/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_${name}_sass.csv" 2>&1
  grep -i "Duration\|Issue Slots Busy\|Warp Cycles Per Issued\|No Eligible" "$OUT/ncu_$name.txt" | head -6
done
