#!/usr/bin/env bash
# Session 21, call 5 (call 4 is at 297a48d): issue 4's lead share listed by one kernel through a bitmap
# (PagingConfig.lead_bits; benchmarks/calls/lead_bits.py: checked, then timed against the default, interleaved,
# on bench_paging's four pools); the fused combine's GPU cases under runtime/triton_backend._fused's final rule
# (full 64-head programs, 2 splits); fp8 NoPE T=64 H=32 beside FlashInfer again (call 3 ran it fused, which the
# rule no longer takes).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/lead_bits.py > "$OUT/lead_bits.log" 2>&1
echo "== lead_bits rc=$?"; grep -v "^|" "$OUT/lead_bits.log" | grep -i "error\|Traceback\|assert" | head -5; sed -n '/^| pool/,$p' "$OUT/lead_bits.log"
timeout 90 python3 benchmarks/gpu_correctness.py gluon fused > "$OUT/gpu_correctness_fused.log" 2>&1
echo "== gpu_correctness fused rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_fused.log"; grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_fused.log" | head -5; tail -1 "$OUT/gpu_correctness_fused.log"
bench_within 120 "" "fp8_nope 32 64"
pack_out
