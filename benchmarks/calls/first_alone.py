"""Issue 7 experiment (session 34, call 5, at ab597e6; measured 0.98-1.00x and removed, so run it at that commit):
GluonKernel.first_alone (the narrow kernel's bf16 gather requests tile 1's rows
only once tile 0's have landed, so at T=1, where every split's first two tiles are the whole top-k list, tile 0's
rows do not share DRAM's bandwidth with tile 1's) against the shipped kernel, in alternating orders (ABBA..., median
us), each checked against the reference first. Run on the GPU after `pip install .`:
  python3 benchmarks/calls/first_alone.py [--rows bf16:1:128,...] [--reps 4]
"""
import argparse

import torch

from gluon_variant import with_fields  # (the script's folder)
from variant_rows import alternating, time_rows

# The suite rows whose H200 entries run the narrow bf16 kernel with two stages (what first_alone applies to).
ROWS = "bf16:1:128,bf16_nope:1:128,bf16_nope:1:64,bf16:4:16,bf16:4:32,bf16:16:16,bf16:16:32,bf16:64:16,bf16:256:16"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    variants = {"shipped": lambda: with_fields(None), "first_alone": lambda: with_fields({"first_alone": True})}
    lines = time_rows(args.rows, variants, alternating(args.reps), torch.device("cuda"))
    with_fields(None)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
