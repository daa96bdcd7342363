#!/usr/bin/env bash
# Prepared in session 42. Any sm90 card with Nsight Compute's counters (Firecracker machines): one plain launch each
# (T=256 H=16 fp8, an L2-resident 16K-slot pool) of proto_fp8_rega.py as it is (V^T as P.V's A from registers), without
# P.V (DIAG 2), with V^T stored over K (--vt-smem), and proto_fp8_raw.py without the transpose (DIAG 1, session 41's
# 78 us): ncu's throughput, warp-state and scheduler sections for each, and the first's stall samples by SASS line.
#   bash benchmarks/calls/h200_call_s42b.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
find_ncu || exit 0
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
run() {  # name, script, args...
  local name=$1 script=$2; shift 2
  timeout 150 "$ncu" --clock-control none -k regex:proto_fp8 --launch-count 1 $sections --section SourceCounters \
    -o "/tmp/$name" python3 "benchmarks/calls/$script" --plain-only --plain-slots 16384 "$@" > "/tmp/$name.run" 2>&1
  echo "== $name rc=$?"; tail -3 "/tmp/$name.run"
  "$ncu" --import "/tmp/$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
  grep -i "Duration\|Issue Slots Busy\|Tensor\|Shared Memory\|Warp Cycles Per Issued\|No Eligible\|Stall" \
    "$OUT/ncu_$name.txt" | head -24
}
run rega proto_fp8_rega.py
"$ncu" --import /tmp/rega.ncu-rep --page source --csv --print-source sass > "$OUT/ncu_rega_sass.csv" 2>&1
echo "== sass csv: $(wc -l < "$OUT/ncu_rega_sass.csv") lines"
run rega_nopv proto_fp8_rega.py --diag 2
run rega_vtsmem proto_fp8_rega.py --vt-smem
run raw_notr proto_fp8_raw.py --diag 1
