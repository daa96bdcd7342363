#!/usr/bin/env bash
# Prepared in session 41. Any sm90 card: proto_fp8_raw.py under compute-sanitizer (where the machine has it), T=2,
# one plain launch each: as it is, without the transpose (DIAG 1), without P.V (DIAG 2), without both (DIAG 3), and
# with one stage and V^T in a buffer of its own (--sep).
#   bash benchmarks/calls/h200_call_s41c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1 || true)
echo "== compute-sanitizer: ${san:-none}"
for args in "--diag 0" "--diag 1" "--diag 2" "--diag 3" "--sep"; do
  log="$OUT/sanitizer_${args// /_}.log"
  timeout 200 ${san:+$san --tool memcheck --print-limit 2} python3 benchmarks/calls/proto_fp8_raw.py --tokens 2 \
    --plain-only $args > "$log" 2>&1
  echo "== $args rc=$?"; grep "plain launch\|Out-of-range\|Invalid\|ERROR SUMMARY\|at proto" "$log" | head -4
done
