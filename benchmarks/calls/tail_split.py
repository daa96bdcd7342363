"""Issue 7 experiment (prepared in session 30 without a GPU): the persistent kernel with its last round's units split
(GluonKernel.tail_split, runtime/triton_backend.tail_split_for, SPARSEMLA_TAIL_SPLIT=1).

The bf16 prefill row T=4096 H=128 (0.998x FlashInfer in session 28) runs 8192 units on 132 programs: 62 rounds, then
8 whole units on 8 SMs while 124 wait, ~1.5% of the call. With tail_split the last 4 tokens' 8 units run as 16 splits
each (128 short units, one round) and the combine kernel merges their partials into those tokens' rows.

1. Correctness, tail split off and on, against the float64 reference: persistent.py's cases with the persistent
   kernel forced for every wide grid of more units than SMs, so each leaves a tail (T=400 H=64: 396 whole units, 4
   tokens in 4 splits; T=150 H=128: 132 whole tokens, 18 in 3 splits; T=140 H=64 with runs of 0- and 1-tile lists:
   most tail splits empty), sinks with +/-inf, LSE, an all-invalid row, unaligned q, poisoned unreferenced slots;
   d_qk 576 and 512.
2. Timing, ABBA over six repetitions (CUDA-graph replay over rotating inputs, median us per call), the runtime's
   own persistent rule: the prefill rows and T=2048 H=128 (4096 units: 31 rounds and 4 units, ~3% to gain).
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/tail_split.py [--rows bf16:4096:128,...] [--no-check]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from persistent import correctness  # (the script's folder)
from variant_rows import alternating, time_rows, wide_unsplit

ROWS = "bf16:4096:128,bf16:4096:64,bf16_nope:4096:128,bf16:2048:128"
_persistent = tb._persistent


def variant(tail: bool, forced: bool) -> None:
    """The runtime with the tail split off or on; ``forced``: persistent for every wide grid of more units than SMs."""
    tb._TAIL_SPLIT = tail
    tb._persistent = (lambda spec, config, units, device: wide_unsplit(spec, config) and units > 132) if forced \
        else _persistent
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    if not args.no_check:
        ok = correctness(dev, {"whole": lambda: variant(False, True), "tail": lambda: variant(True, True)})
        print("correctness:", "all ok" if ok else "FAILED", flush=True)
    lines = time_rows(args.rows, {"whole": lambda: variant(False, False), "tail": lambda: variant(True, False)},
                      alternating(6), dev)
    variant(False, False)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
