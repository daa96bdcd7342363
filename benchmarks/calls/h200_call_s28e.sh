#!/usr/bin/env bash
# Session 28, call 7: why torch.compile(mode="reduce-overhead") calls took more wall time than eager ones in call 3
# (bf16 T=128 H=128: 325 against 190 us): the same rows with Inductor's CUDA-graph logs (re-recordings, skips).
#   bash benchmarks/calls/h200_call_s28e.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
TORCH_LOGS="perf_hints,cudagraphs" timeout 100 python3 benchmarks/calls/compile_gpu.py --rows bf16:128:128,model1:1:128 \
  > "$OUT/compile_gpu_logs.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|skip\|record\|Record\|re-record\|ERROR" "$OUT/compile_gpu_logs.log" | sort | uniq -c | sort -rn | head -30 | cut -c1-200
