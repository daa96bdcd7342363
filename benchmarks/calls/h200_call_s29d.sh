#!/usr/bin/env bash
# Prepared in session 29, a fourth call if device time is left after h200_session.sh, s29b and s29c: where
# the tiles' time goes (benchmarks/calls/gluon_timeline.py, profile builds) in the rows s_ahead and three stages
# are for, plain and with s_ahead: the T=1 H=128 entry (two tiles a program) and model1 T=256 H=16 (shipped one
# stage; three stages with two dequantizing groups). Then zero-width index lists on the GPU's auto path.
#   bash benchmarks/calls/h200_call_s29d.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
ROWS="bf16:128:1,model1:16:256,model1:16:256:h16.s1.w12.st3"
timeout 200 python3 benchmarks/calls/gluon_timeline.py --rows "$ROWS" > "$OUT/timeline_plain.log" 2>&1
echo "== timeline plain rc=$?"; grep "programs,\|per tile\|Error" "$OUT/timeline_plain.log" | cut -c1-110
ROWS="bf16:128:1,model1:16:256:h16.s1.w12.st3"
timeout 200 python3 benchmarks/calls/gluon_timeline.py --rows "$ROWS" --with s_ahead=True > "$OUT/timeline_s_ahead.log" 2>&1
echo "== timeline s_ahead rc=$?"; grep "programs,\|per tile\|Error" "$OUT/timeline_s_ahead.log" | cut -c1-110
# A zero-width list on the GPU's auto path (bf16, model1 and fp8 with an extra cache; tests/ check the CPU's).
timeout 60 python3 benchmarks/calls/zero_width_gpu.py > "$OUT/zero_width_gpu.log" 2>&1
echo "== zero_width_gpu rc=$?"; tail -4 "$OUT/zero_width_gpu.log"
pack_out
