"""Issue 7 (session 35): the narrow Gluon kernel's split-K partials as bfloat16 (GluonKernel.parts_bf16 with the
combine's PARTS_BF16, runtime/triton_backend.parts_bf16_for's rule) against float32, each checked against the
reference first (gen.gpu_measure.check on poisoned inputs; the relative errors are printed with each row), then timed
in alternating orders (ABBA..., CUDA-graph replay, median us). head_fast.py (call 2) showed that the partials' bytes,
not their store instructions, cost ~1 us at T=1. `--wide`: the wide kernel's (64-head programs) bfloat16 partials
against its float32 ones, on the rows whose entries run it with split-K merged by the combine kernel (session 36's
call 1 ran it with SPARSEMLA_PARTS_BF16_WIDE=1, the flag of the time, which kept the wide kernel's off by default).
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/parts_bf16.py [--wide] [--rows bf16:1:128,...] [--reps 6]
"""
import argparse

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.runtime.api import clear_call_cache
from variant_rows import alternating, time_rows  # (the script's folder)

# Suite rows whose H200 entries run the narrow Gluon kernel with split-K.
ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:16,bf16:4:32,bf16:16:16,bf16:64:16,fp8:1:128,fp8_ds_mla:1:128," \
       "fp8:1:16,fp8:16:16,model1:16:16,fp8_ds_mla:4:16"
# Suite rows whose H200 entries run the wide Gluon kernel with split-K merged by the combine kernel (not FUSED).
WIDE_ROWS = "bf16:4:64,bf16:4:128,bf16:16:64,bf16:16:128,bf16_nope:16:64,fp8:1:32,fp8:4:128,fp8:16:128," \
            "fp8_ds_mla:4:128,fp8_ds_mla:16:64,model1:1:128,model1:16:128"
DEFAULT = tb._PARTS_BF16


def parts_bf16(on: bool):
    tb._PARTS_BF16 = on
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wide", action="store_true", help="the wide kernel's partials (WIDE_ROWS)")
    ap.add_argument("--rows", default=None, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args()
    variants = {"float32": lambda: parts_bf16(False), "bfloat16": lambda: parts_bf16(True)}
    rows = args.rows or (WIDE_ROWS if args.wide else ROWS)
    lines = time_rows(rows, variants, alternating(args.reps), torch.device("cuda"))
    tb._PARTS_BF16 = DEFAULT
    clear_call_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
