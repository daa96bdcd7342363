#!/usr/bin/env bash
# Session 23's last call (6) as it ran; no next call is prepared: the next session writes its own.
# Call 6 (issue 7): gpu_correctness.py with the combine's PDL rule and reservation
# (runtime/triton_backend._pdl, _combine_reserve): model1's narrow cases (calls 3 and 5 did not reach them),
# then the Gluon cases of three formats (the wide kernel's 16- and 32-head cases with 4 splits take PDL and a
# two-per-SM reservation).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
timeout 90 python3 benchmarks/gpu_correctness.py model1_p64 narrow > "$OUT/gpu_correctness_model1_narrow.log" 2>&1
echo "== gpu_correctness model1 narrow rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_model1_narrow.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_model1_narrow.log" | head -5; tail -1 "$OUT/gpu_correctness_model1_narrow.log"
timeout 200 python3 benchmarks/gpu_correctness.py auto576 fp8_576 ds_mla gluon > "$OUT/gpu_correctness_gluon.log" 2>&1
echo "== gpu_correctness gluon rc=$?"; grep -c " ok$" "$OUT/gpu_correctness_gluon.log"
grep "FAIL\|Error\|error:" "$OUT/gpu_correctness_gluon.log" | head -5; tail -1 "$OUT/gpu_correctness_gluon.log"
pack_out
