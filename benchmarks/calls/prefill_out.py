"""Issue 7 experiment (prepared at the end of session 24, not yet run): the wide bf16 kernel's output path at
prefill and T >= 128. Three variants, forced (runtime/triton_backend._persistent and _staged_out patched):
- "staged": not persistent, output through a stage (what the runtime runs for every wide row but bf16 prefill);
- "persistent": the persistent kernel with direct stores (what it runs for bf16 prefill, persistent_for);
- "persistent+staged": the persistent kernel writing through the last tile's stage (GluonKernel.persistent with
  staged_out, prepared in session 24 and never run on the GPU).

1. Correctness of "persistent+staged" (and the other two) against the float64 reference: the cases of
   benchmarks/calls/persistent.py (more units than SMs, runs of units of 0 and 1 tiles, sinks with +/-inf, LSE,
   unaligned q, poisoned unreferenced slots; d_qk 576 and 512).
2. Timing in rotated orders (a Latin square over six repetitions: the first of a pair runs faster, session 24
   call 5), median us. bf16 T=64 H=128 (128 units) is the null row: every variant is the staged kernel there.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/prefill_out.py [--rows bf16:4096:128,...] [--no-check]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from persistent import correctness  # (the script's folder)
from variant_rows import time_rows, wide_unsplit

VARIANTS = ("staged", "persistent", "persistent+staged")
ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0), (1, 0, 2), (0, 2, 1))
ROWS = "bf16:64:128,bf16:4096:128,bf16:4096:64,bf16_nope:4096:128,bf16_nope:4096:64,bf16:128:128,bf16:256:128"
_rules = (tb._persistent, tb._staged_out)


def variant(name: str) -> None:
    on = "persistent" in name
    tb._persistent = lambda spec, config, units, device: on and wide_unsplit(spec, config) and units > 132
    tb._staged_out = lambda config, persistent: "staged" in name and config.gluon and config.block_h == 64 \
        and config.num_splits == 1
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    variants = {name: (lambda name=name: variant(name)) for name in VARIANTS}
    if not args.no_check:
        print("correctness:", "all ok" if correctness(dev, variants) else "FAILED", flush=True)
    lines = time_rows(args.rows, variants, ORDERS, dev)
    tb._persistent, tb._staged_out = _rules
    api.clear_call_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
