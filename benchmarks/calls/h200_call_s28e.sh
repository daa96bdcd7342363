#!/usr/bin/env bash
# Prepared in session 28, extended in session 29 (not run yet: no machine was lent in either session).
# Why torch.compile calls took more wall time than eager ones in session 28's call 3 (bf16 T=128 H=128 under
# reduce-overhead: 325 against 190 us). Session 29 found two causes on the CPU and this call measures both:
#  - default mode: torch.library.custom_op's per-call Python layers (~120 us of host time with this schema);
#    the operator is now a torch.library.Library definition (~11 us). Expect the default-mode rows near eager.
#  - reduce-overhead: CUDA-graph trees copy every non-static input into their own buffer at each replay, the
#    whole KV cache here (bf16: 302 MB, ~140 us). Expect "reduce-overhead+static" (the cache marked with
#    torch._dynamo.mark_static_address) at about the kernel's time, and plain reduce-overhead ~140 us above it.
# Then two rows again with Inductor's CUDA-graph logs, to show re-recordings or skips if any remain.
#   bash benchmarks/calls/h200_call_s28e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|ERROR\|correctness" "$OUT/compile_gpu.log" | cut -c1-200
TORCH_LOGS="perf_hints,cudagraphs" timeout 150 python3 benchmarks/calls/compile_gpu.py --rows bf16:128:128,model1:1:128 \
  > "$OUT/compile_gpu_logs.log" 2>&1
echo "== compile_gpu (logs) rc=$?"; grep "skip\|record\|Record\|re-record\|ERROR" "$OUT/compile_gpu_logs.log" | sort | uniq -c | sort -rn | head -30 | cut -c1-200
