"""Issue 7 experiment (session 24, call 6, at 1e0aae0): the persistent wide kernel with Q's first 256 columns copied
early (the next unit's go into Q's buffer as soon as this unit's are in registers; the rest once its last S is
done) against the shipped non-persistent kernel, in ABBA order. The early copy was no better and is reverted
(benchmarks/results/session24/README.md); run at a later commit, this times the persistent kernel as it is.

Call 5 (benchmarks/calls/wide_tiles.py) found that, in pairs timed shipped-then-persistent, two identical kernels
(T=64 H=128 has 128 units, so both ran non-persistent) differed by up to 3%: the first of a pair runs faster. So
here each repetition alternates which goes first, four repetitions, median us. bf16 T=64 H=128 is the null row
(both non-persistent). Each variant is checked against the reference first (gen.gpu_measure.check, poisoned).
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/persistent_abba.py [--rows bf16:128:128,...]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from variant_rows import alternating, time_rows  # (the script's folder)

ROWS = "bf16:64:128,bf16:128:128,bf16_nope:128:128,bf16:256:64,bf16_nope:256:64,bf16:256:128,bf16_nope:256:128," \
       "bf16:4096:128,bf16_nope:4096:128,bf16:4096:64,bf16_nope:4096:64"
_rule = tb._persistent


def persistent(on: bool) -> None:
    """Forced: the persistent kernel for every wide bf16 grid of more units than SMs (or never)."""
    tb._persistent = (lambda spec, config, units, device: config.gluon and config.block_h == 64
                      and config.num_splits == 1 and spec.kv_format == "auto" and units > 132) if on \
        else (lambda *a: False)
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    dev = torch.device("cuda")
    variants = {"shipped": lambda: persistent(False), "persistent": lambda: persistent(True)}
    lines = time_rows(args.rows, variants, alternating(args.reps), dev)
    tb._persistent = _rule
    api.clear_call_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
