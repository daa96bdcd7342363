#!/usr/bin/env bash
# No new call is prepared: the next session writes its own. Session 22's last call (8, at 962530f) ran code
# removed after it; this file holds its call 5 again, a diagnostic that runs as the tree is
# (benchmarks/results/session22/README.md): the combine kernel's share of the small-T split rows
# (benchmarks/calls/combine_share.py: each row as the runtime runs it against its attention kernel alone).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/combine_share.py --tokens 1,4 --heads 128,64 > "$OUT/combine_share.log" 2>&1
echo "== combine_share rc=$?"; sed -n '/^| format/,$p' "$OUT/combine_share.log"; grep -i "error\|Traceback" "$OUT/combine_share.log" | head -5
pack_out
