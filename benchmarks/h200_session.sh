#!/usr/bin/env bash
# The next device call on the H200. No experiment is queued after session 11 (its six calls are in
# benchmarks/results/session11/README.md); until one is, this re-checks what is shipped: bf16
# correctness of every format x feature (benchmarks/gpu_correctness.py), then the paging benchmark
# with its GPU correctness and graph checks.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
timeout 240 python3 benchmarks/gpu_correctness.py > "$OUT/gpu_correctness.log" 2>&1
echo "== gpu_correctness rc=$?"; grep -ci fail "$OUT/gpu_correctness.log"; tail -3 "$OUT/gpu_correctness.log"
paging 240 paging
pack_out
