"""Issue 7 (session 35): the narrow Gluon kernel's split-K partials as bfloat16 (GluonKernel.parts_bf16 with the
combine's PARTS_BF16, runtime/triton_backend.parts_bf16_for's rule) against float32, each checked against the
reference first (gen.gpu_measure.check on poisoned inputs; the relative errors are printed with each row), then timed
in alternating orders (ABBA..., CUDA-graph replay, median us). head_fast.py (call 2) showed that the partials' bytes,
not their store instructions, cost ~1 us at T=1. Run on the GPU after `pip install .`:
  python3 benchmarks/calls/parts_bf16.py [--rows bf16:1:128,...] [--reps 6]
"""
import argparse

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.runtime.api import clear_call_cache
from variant_rows import alternating, time_rows  # (the script's folder)

# Suite rows whose H200 entries run the narrow Gluon kernel with split-K.
ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:16,bf16:4:32,bf16:16:16,bf16:64:16,fp8:1:128,fp8_ds_mla:1:128," \
       "fp8:1:16,fp8:16:16,model1:16:16,fp8_ds_mla:4:16"
DEFAULT = tb._PARTS_BF16


def parts_bf16(on: bool):
    tb._PARTS_BF16 = on
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args()
    variants = {"float32": lambda: parts_bf16(False), "bfloat16": lambda: parts_bf16(True)}
    lines = time_rows(args.rows, variants, alternating(args.reps), torch.device("cuda"))
    parts_bf16(DEFAULT)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
