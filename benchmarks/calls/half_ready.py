"""Issue 7 experiment (session 33, call 3, at 2adb0d8): GluonKernel.half_ready (the narrow fp8 kernel's group C
arrives on a second barrier once it has stored a tile's columns 0-255, and M's S^T starts on them while C converts
the rest; measured 0.91-0.98x and removed, commit 06e3644 has it) against the shipped kernel, in alternating orders
(ABBA..., median us), each checked against the reference first. Run on the GPU after `pip install .` of that tree:
  python3 benchmarks/calls/half_ready.py [--rows fp8:256:16,...] [--reps 4]
"""
import argparse

import torch

from gluon_variant import with_fields  # (the script's folder)
from variant_rows import alternating, time_rows

ROWS = "fp8:256:16,fp8_nope:256:16,fp8_ds_mla:256:16,model1:256:16,fp8:128:16,fp8:64:16,fp8:16:16,model1:64:16," \
       "fp8:256:32,fp8_ds_mla:256:32,model1:256:32"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    variants = {"shipped": lambda: with_fields(None), "half_ready": lambda: with_fields({"half_ready": True})}
    lines = time_rows(args.rows, variants, alternating(args.reps), torch.device("cuda"))
    with_fields(None)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
