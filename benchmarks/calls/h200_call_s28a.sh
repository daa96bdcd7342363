#!/usr/bin/env bash
# Session 28, call 1: the register-operand prototype, what session 27 changed without a GPU, and one small lever.
# - proto_regs_a.py: the narrow fp8 kernel with wgmma's A operand dequantized in registers (no bf16 stage),
#   fp8_e4m3 T=256 H=16: correctness against the reference, then timed beside the shipped kernel.
# - compile_gpu.py: torch.compile(mode="reduce-overhead") failed with split-K in session 27 (the workspace was born
#   in the CUDA-graph tree's pool); workspaces are now allocated on a stream of their own. Re-run.
# - stream_check.py: the per-stream buffers after the stream_key refactor (session 27's last commit).
# - gluon_variant.py ready_fence=False: the narrow fp8 kernel without the computing group's fence after each READY
#   wait, on the fp8 T=256 H=16 rows (shipped, False, then True: a pair's first is favoured).
#   bash benchmarks/calls/h200_call_s28a.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 120 python3 benchmarks/calls/proto_regs_a.py > "$OUT/proto_regs_a.log" 2>&1
echo "== proto_regs_a rc=$?"; grep "trial\|^|\|correctness\|Error" "$OUT/proto_regs_a.log" | cut -c1-160
timeout 170 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|correctness\|ERROR\|Error" "$OUT/compile_gpu.log" | cut -c1-160
timeout 90 python3 benchmarks/calls/stream_check.py > "$OUT/stream_check.log" 2>&1
echo "== stream_check rc=$?"; grep "FAIL\|Error\|^|\|stream_check:" "$OUT/stream_check.log" | cut -c1-160
timeout 140 python3 benchmarks/calls/gluon_variant.py ready_fence=False ready_fence=True \
  --rows fp8:16:256,model1:16:256,fp8_ds_mla:16:256 > "$OUT/ready_fence.log" 2>&1
echo "== gluon_variant ready_fence rc=$?"; grep "^|\|FAIL\|Error" "$OUT/ready_fence.log" | cut -c1-160
pack_out
