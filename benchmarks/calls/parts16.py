"""Issue 7 (session 34): the narrow Gluon kernel's split-K partials as float16 in whole 32-byte sectors
(GluonKernel.parts_f16 with the combine's PARTS_F16, runtime/triton_backend.parts_f16_for's rule with
SPARSEMLA_PARTS_F16=1) against float32 (the default), each checked against the reference first (gen.gpu_measure.check on poisoned
inputs), then timed in alternating orders (ABBA..., CUDA-graph replay, median us). half_parts.py's diagnostic
(half the sectors written and read) put the gain at ~1 us at T=1. --no-max adds a diagnostic third variant: float16
partials scaled by a fixed 2^12, not by each row's largest value (no cross-warp reduction; wrong past |16|, right on
these inputs), timed only. Run on the GPU after `pip install .`:
  python3 benchmarks/calls/parts16.py [--rows bf16:1:128,...] [--reps 4] [--no-max]
"""
import argparse
import statistics

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.runtime.api import clear_call_cache
from half_parts import SHIPPED_LOAD, _edited_module  # (the script's folder)
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.gpu_measure import timing_sets
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config
from variant_rows import alternating, time_rows, timed_in_orders

# Suite rows whose H200 entries run the narrow Gluon kernel with split-K.
ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:16,bf16:4:32,bf16:16:16,bf16:64:16,fp8:1:128,fp8_ds_mla:1:128," \
       "fp8:1:16,fp8:16:16,model1:16:16,fp8_ds_mla:4:16"


NO_MAX = ("big = gl.max(gl.abs(acc), axis=0) * inv", "big = inv * 0.0 + 4.0")


DEFAULT = tb._PARTS_F16


def parts_f16(on: bool, no_max: bool = False):
    tb._PARTS_F16 = on
    tb.load_module = (lambda spec: _edited_module(spec, NO_MAX) if isinstance(spec, GluonKernel) and spec.parts_f16
                      else SHIPPED_LOAD(spec)) if no_max else SHIPPED_LOAD
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--no-max", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    variants = {"float32": lambda: parts_f16(False), "float16": lambda: parts_f16(True)}
    lines = time_rows(args.rows, variants, alternating(args.reps), dev)
    if args.no_max:  # timed only, in rotating orders beside the two
        variants["float16 no max"] = lambda: parts_f16(True, True)
        lines += ["", "| format | T | H | float32 | float16 | float16 no max |", "|---|---|---|---|---|---|"]
        for row in args.rows.split(","):
            fmt, T, H = row.split(":")
            spec = suite_spec(fmt, int(H), "sm90")
            times = timed_in_orders(timing_sets(spec, int(T), dev), select_config(spec, int(T), dev), variants,
                                    tuple(tuple((r + i) % 3 for i in range(3)) for r in range(args.reps)))
            med = {n: statistics.median(v) for n, v in times.items()}
            lines.append(f"| {fmt} | {T} | {H} | " + " | ".join(f"{med[n]:.2f}" for n in variants) + " |")
            print(lines[-1], f"(runs: {times})", flush=True)
    parts_f16(DEFAULT)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
