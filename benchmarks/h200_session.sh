#!/usr/bin/env bash
# Session 22's call 6 as it ran (benchmarks/results/session22/README.md); no new call is prepared: the next
# session writes its own. benchmarks/calls/cluster_probe.py: a Gluon kernel launched as thread-block clusters
# on Triton 3.6 (every CTA runs, inline-asm stores from each land, cycles per cluster barrier), the first step
# of a split-K merge through a cluster (issue 7's T=1 H=128: 7.4 us without its merge, 10.1 with it).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 120 python3 benchmarks/calls/cluster_probe.py > "$OUT/cluster_probe.log" 2>&1
echo "== cluster_probe rc=$?"; cat "$OUT/cluster_probe.log" | tail -30
pack_out
