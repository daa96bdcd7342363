#!/usr/bin/env bash
# Prepared at the end of session 24, not yet run (session 24's last call, 9, benched the staged output's rows;
# session 25 had no device time and added the timeline step).
# The bf16 prefill rows run the persistent kernel with direct stores (runtime/triton_backend.persistent_for);
# every other wide row writes through a stage (_staged_out, 1.025-1.087x). benchmarks/calls/prefill_out.py checks
# and times three variants (staged, persistent, persistent+staged: the persistent kernel writing through the last
# tile's stage, never run on the GPU yet) in rotated orders at prefill and T=128-256 with 128 heads.
# First gpu_correctness.py's new `persistent` cases (T=1100, 128 heads: persistent by the rule with rope, staged
# without). Then: set the rules to the winner (persistent_for, _staged_out), re-bench the rows that change beside FlashInfer
# and merge them (benchmarks/merge_bench.py).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
# Where the narrow fp8 kernel's tiles go (issue 7's fp8 T=256 H=16 rows, 0.46-0.55 of the copy ceiling): the
# computing group's per-tile work split into S's wgmma, the softmax and P.V (slots 24-25, never run yet), bf16 as
# the HBM-bound contrast. (The profile builds of the one-stage fp8 kernels spill 4-116 B; the shipped ones none.)
timeout 110 python3 benchmarks/calls/gluon_timeline.py --rows fp8:16:256,model1:16:256,fp8_ds_mla:16:256,bf16:16:256 \
  > "$OUT/gluon_timeline.log" 2>&1
echo "== gluon_timeline rc=$?"; grep "programs,\|per tile\|clock\|Error" "$OUT/gluon_timeline.log" | cut -c1-110
timeout 100 python3 benchmarks/gpu_correctness.py auto576 auto_nope512 persistent > "$OUT/gpu_correctness_persistent.log" 2>&1
echo "== gpu_correctness persistent rc=$?"; tail -3 "$OUT/gpu_correctness_persistent.log"
timeout 330 python3 benchmarks/calls/prefill_out.py > "$OUT/prefill_out.log" 2>&1
echo "== prefill_out rc=$?"; grep "correctness:\|FAIL\|Error\|error:" "$OUT/prefill_out.log" | head
sed -n '/^| format/,$p' "$OUT/prefill_out.log"
pack_out
