#!/usr/bin/env bash
# The next planned call, prepared in session 29 (no machine was lent at the end of session 28 or in session 29):
#  1. GluonKernel.s_ahead (compile-checked only): the narrow kernel with two stages issues tile j+1's S before tile
#     j's softmax (FA3's overlap inside one warp group). benchmarks/calls/gluon_variant.py checks each row like a
#     tuning trial and times it with and without, in one process. Rows: the T=1 H=128 target rows (their shipped
#     h16 s16 st2 entries take it as they are: two tiles a program, both filled up front, where it should gain),
#     and issue 7's fp8 T=256 H=16 rows in two-stage configs beside their shipped one-stage entries (those print
#     "-": one stage cannot hold tile j+1); there the next tile's fill must land right after the stage frees, so
#     it may lose (DEVELOPERS.md).
#  2. a zero-width list on the GPU's auto path (bf16, model1 and fp8 with an extra cache; tests/ check the CPU's).
#  3. torch.compile (benchmarks/calls/compile_gpu.py, session 28's five rows, three modes): the operator is now a
#     torch.library.Library definition (custom_op cost ~120 us of host time a call) and "reduce-overhead+static"
#     marks the cache static (CUDA-graph trees otherwise copy it at each replay). Expected: the default mode
#     near eager, reduce-overhead+static at about the kernel's time.
# The paging benchmark (issue 4) is the next call: benchmarks/calls/h200_call_s29b.sh.
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
# (FORMAT:H:T: the table's entry; FORMAT:H:T:CONFIG that Gluon config) two tiles a program first, then four, then 32
ROWS="bf16:128:1,bf16_nope:128:1,fp8:128:1,bf16:64:1,bf16:32:4,fp8_nope:16:16,fp8:16:128"
ROWS="$ROWS,fp8:16:256,fp8:16:256:h16.s1.w12.st2,fp8:16:256:h16.s2.w12.st2"
ROWS="$ROWS,model1:16:256,model1:16:256:h16.s1.w12.st2,fp8_ds_mla:16:256,fp8_ds_mla:16:256:h16.s1.w12.st2,bf16:16:256"
timeout 270 python3 benchmarks/calls/gluon_variant.py s_ahead=True --rows "$ROWS" > "$OUT/s_ahead.log" 2>&1
echo "== s_ahead rc=$?"; grep -i "error\|Traceback" "$OUT/s_ahead.log" | head -5; sed -n '/^| format/,$p' "$OUT/s_ahead.log"
timeout 60 python3 benchmarks/calls/zero_width_gpu.py > "$OUT/zero_width_gpu.log" 2>&1
echo "== zero_width_gpu rc=$?"; tail -4 "$OUT/zero_width_gpu.log"
timeout 200 python3 benchmarks/calls/compile_gpu.py > "$OUT/compile_gpu.log" 2>&1
echo "== compile_gpu rc=$?"; grep "^|\|ERROR\|correctness" "$OUT/compile_gpu.log" | cut -c1-200
pack_out
