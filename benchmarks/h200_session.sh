#!/usr/bin/env bash
# The next planned call, prepared in session 29 (no machine was lent at the end of session 28 or in session 29):
#  1. GluonKernel.s_ahead and three-stage narrow kernels (both compile-checked only). s_ahead: the narrow kernel
#     issues tile j+1's S before tile j's softmax (FA3's overlap inside one warp group). Three stages (16 heads,
#     d_qk 512: ~215 KB): the loading groups work two tiles ahead. benchmarks/calls/gluon_variant.py checks each
#     row like a tuning trial and times it as given and with s_ahead, in one process (rows print as they finish).
#     Rows, most likely to gain first: the T=1 and T=4 entries of two tiles a program (both filled up front);
#     three-stage configs for issue 7's model1 T=256 H=16 row (0.46 of the copy ceiling) and the NoPE rows beside
#     their shipped one-stage entries (the shipped rows print "-" for s_ahead: one stage cannot hold tile j+1);
#     then two-stage configs for the fp8 d_qk 576 rows, where the next tile's fill must land right after its stage
#     frees, so s_ahead may lose (DEVELOPERS.md).
# The next calls, in order: benchmarks/calls/h200_call_s30a.sh (the persistent kernel's tail split), h200_call_s30b.sh
# (the Gluon kernel as a programmatic dependent), h200_call_s29c.sh,
# h200_call_s29b.sh (torch.compile, the paging benchmark), h200_call_s29d.sh (benchmarks/results/session30/README.md).
#   bash benchmarks/h200_session.sh   (after: source .whl/prelude.sh && python3 -m pip install .)
set -u
export PYTHONUNBUFFERED=1
. benchmarks/h200_steps.sh
check_tables
# (FORMAT:H:T: the table's entry; FORMAT:H:T:CONFIG: that Gluon config) in order of interest: a cut run keeps the
# rows before it (each prints as it finishes; a fresh machine compiles every module, ~10-20 s each)
ROWS="bf16:128:1,bf16_nope:128:1,fp8:128:1,bf16:64:1"
ROWS="$ROWS,model1:16:256,model1:16:256:h16.s1.w12.st3,model1:16:256:h16.s1.w8.st3"
ROWS="$ROWS,fp8_nope:16:256,fp8_nope:16:256:h16.s1.w12.st3,fp8:16:128,fp8:16:256,fp8:16:256:h16.s1.w12.st2"
ROWS="$ROWS,bf16:32:4,fp8_nope:16:16,model1:16:128:h16.s1.w12.st3,bf16_nope:16:256,bf16_nope:16:256:h16.s1.w8.st3"
ROWS="$ROWS,fp8_ds_mla:16:256,fp8_ds_mla:16:256:h16.s1.w12.st2"
timeout 520 python3 benchmarks/calls/gluon_variant.py s_ahead=True --rows "$ROWS" > "$OUT/s_ahead.log" 2>&1
echo "== s_ahead rc=$?"; grep -i "error\|Traceback" "$OUT/s_ahead.log" | head -5; grep "^| " "$OUT/s_ahead.log" | sort -u
pack_out
