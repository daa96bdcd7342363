#!/usr/bin/env bash
# Session 22's call 5 as it ran (benchmarks/results/session22/README.md); no new call is prepared: the next
# session writes its own. The combine kernel's share of the small-T split rows (benchmarks/calls/combine_share.py:
# each row as the runtime runs it against its attention kernel alone), for issue 7's T=1 H=128 target.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 200 python3 benchmarks/calls/combine_share.py --tokens 1,4 --heads 128,64 > "$OUT/combine_share.log" 2>&1
echo "== combine_share rc=$?"; sed -n '/^| format/,$p' "$OUT/combine_share.log"; grep -i "error\|Traceback" "$OUT/combine_share.log" | head -5
pack_out
