#!/usr/bin/env bash
# Prepared in session 41. Any sm90 card: proto_fp8_raw.py under compute-sanitizer (where the machine has it), T=2:
# one plain launch, then the DEBUG build's tile 0; then the plain call as s41b runs it.
#   bash benchmarks/calls/h200_call_s41c.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "== $gpu"
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/*/compute-sanitizer 2>/dev/null \
      | head -1 || true)
[ -z "$san" ] && san=$(find / -name compute-sanitizer -type f 2>/dev/null | head -1)
echo "== compute-sanitizer: ${san:-none}"
for mode in --plain-only --debug-only; do
  if [ -n "$san" ]; then
    timeout 200 "$san" --tool memcheck --print-limit 6 python3 benchmarks/calls/proto_fp8_raw.py --tokens 2 $mode \
      > "$OUT/sanitizer${mode}.log" 2>&1
  else
    timeout 100 python3 benchmarks/calls/proto_fp8_raw.py --tokens 2 $mode > "$OUT/sanitizer${mode}.log" 2>&1
  fi
  echo "== $mode rc=$?"; grep -v "^\s*$" "$OUT/sanitizer${mode}.log" | grep -v "^=========     \(Host\|  \)" | head -40
done
