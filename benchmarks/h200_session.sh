#!/usr/bin/env bash
# Session 22, call 8: GluonKernel.cluster (the narrow bf16 kernel's splits of a token and head block as one
# thread-block cluster that merges them; SPARSEMLA_CLUSTER_MERGE=1, forced by the scripts): gpu_correctness.py's
# cluster cases (sinks including +-inf, LSE, a -1 row, topk_length, masked heads, empty splits; bf16 with and
# without rope), then benchmarks/calls/cluster_merge.py (the combine kernel against the cluster in the T=1 and
# T=4 rows whose entries are narrow grids of 2-16 splits, each checked before and after its timing).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 75 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 gluon cluster > "$OUT/correct_cluster.log" 2>&1
echo "== correct_cluster rc=$?"; grep -c " ok$" "$OUT/correct_cluster.log"; grep "FAIL\|Error\|error" "$OUT/correct_cluster.log" | head -6
timeout 115 python3 benchmarks/calls/cluster_merge.py --tokens 1,4 > "$OUT/cluster_merge.log" 2>&1
echo "== cluster_merge rc=$?"; sed -n '/^| format/,$p' "$OUT/cluster_merge.log"; grep "^| \|Error\|error" "$OUT/cluster_merge.log" | head -12
pack_out
