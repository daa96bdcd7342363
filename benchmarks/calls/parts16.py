"""(Needs commit 0817c6a: GluonKernel.parts_f16 and the combine's PARTS_F16 were measured and removed in
session 35.) Issue 7 (session 34): the narrow Gluon kernel's split-K partials as float16 in whole 32-byte sectors
(GluonKernel.parts_f16 with the combine's PARTS_F16, runtime/triton_backend.parts_f16_for's rule with
SPARSEMLA_PARTS_F16=1) against float32 (the default), each checked against the reference first
(gen.gpu_measure.check on poisoned inputs), then timed in alternating orders (ABBA..., CUDA-graph replay, median
us). half_parts.py's diagnostic (half the sectors written and read) put the gain at ~1 us at T=1. (Call 8 ran it at
588dd64 with a --no-max variant, a fixed scale instead of the rows' max; the per-warp scales since need no
cross-warp max.) Run on the GPU after `pip install .`:
  python3 benchmarks/calls/parts16.py [--rows bf16:1:128,...] [--reps 4]
"""
import argparse

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.runtime.api import clear_call_cache
from variant_rows import alternating, time_rows  # (the script's folder)

# Suite rows whose H200 entries run the narrow Gluon kernel with split-K.
ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:16,bf16:4:32,bf16:16:16,bf16:64:16,fp8:1:128,fp8_ds_mla:1:128," \
       "fp8:1:16,fp8:16:16,model1:16:16,fp8_ds_mla:4:16"


DEFAULT = tb._PARTS_F16


def parts_f16(on: bool):
    tb._PARTS_F16 = on
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    variants = {"float32": lambda: parts_f16(False), "float16": lambda: parts_f16(True)}
    lines = time_rows(args.rows, variants, alternating(args.reps), torch.device("cuda"))
    parts_f16(DEFAULT)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
