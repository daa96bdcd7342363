"""Issue 7 experiment (session 34, call 2, at 1853e97): the split-K partials stored as float16
(runtime/triton_backend._PARTS_FP16 at that commit, no scaling: an upper bound on what halving their bytes buys;
unsafe past 65504; measured 0.75-1.00x and removed, so run it at that commit) against float32, in alternating
orders, each checked against the reference first (gen.gpu_measure.check on poisoned inputs). The Gluon kernels'
stores to the float16 pointer keep their instruction count (each still writes 8 rows of 2-byte values per head,
16-byte segments where float32 wrote 32-byte ones); the combine reads half the bytes. Run on the GPU after
`pip install .`:
  python3 benchmarks/calls/parts_fp16.py [--rows bf16:1:128,...] [--reps 4]
"""
import argparse

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.runtime.api import clear_call_cache
from variant_rows import alternating, time_rows  # (the script's folder)

ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:128,bf16:4:16,bf16:16:16,fp8:1:128,fp8_ds_mla:1:128," \
       "model1:1:128,fp8:16:16"


def parts_fp16(on: bool):
    if not hasattr(tb, "_PARTS_FP16"):  # (both variants would run the same kernels)
        raise SystemExit("runtime/triton_backend has no _PARTS_FP16 switch: run this script at commit 1853e97")
    tb._PARTS_FP16 = on
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    variants = {"float32": lambda: parts_fp16(False), "float16": lambda: parts_fp16(True)}
    lines = time_rows(args.rows, variants, alternating(args.reps), torch.device("cuda"))
    parts_fp16(False)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
