"""Issue 7 diagnostic (session 22): how much of a small-T split row is the combine kernel.

For each suite row given (formats x heads x tokens) whose tuned config splits the top-k, the runtime's
launch is timed as it runs (the attention kernel, then the combine kernel, behind PDL where the runtime's
rule takes it) and with the combine kernel dropped (the attention kernel alone; its output is then not
the attention's, so nothing is checked in that mode), interleaved twice (gen.gpu_measure.time_calls:
CUDA-graph replay over rotating inputs, as a tuning trial), us per call. The difference bounds what any
other merge could save.
Run on the GPU after `pip install .`: python3 benchmarks/calls/combine_share.py [--formats bf16 --heads 128 --tokens 1]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, time_calls, timing_sets
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config

_init = tb.TritonLaunch.__init__


def combine_dropped(drop: bool):
    """Launches prepared from now on run (drop=False) or skip (drop=True) the combine kernel."""
    def init(self, *a, **kw):
        _init(self, *a, **kw)
        if drop:
            self.combine = None
    tb.TritonLaunch.__init__ = init
    api.clear_call_cache()  # (a prepared launch keeps the kernels it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="64,128")
    ap.add_argument("--tokens", default="1,4")
    args = ap.parse_args()
    dev = torch.device("cuda")
    lines = ["| format | H | T | config | grid | as run | attention kernel alone | combine's share |",
             "|---|---|---|---|---|---|---|---|"]
    for T in map(int, args.tokens.split(",")):
        for fmt in args.formats.split(","):
            for H in map(int, args.heads.split(",")):
                spec = suite_spec(fmt, H, "sm90")
                cfg = select_config(spec, T, dev)
                S = cfg.num_splits
                if S < 2:
                    continue
                sets = timing_sets(spec, T, dev)
                times = {False: [], True: []}
                for _ in range(2):
                    for drop in (False, True):
                        combine_dropped(drop)
                        times[drop].append(time_calls(_calls(sets, cfg))[0])
                full, alone = min(times[False]), min(times[True])
                label = f"h{cfg.block_h} s{S} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
                grid = T * -(-H // cfg.block_h) * S
                line = f"| {fmt} | {H} | {T} | {label} | {grid} | {full:.2f} | {alone:.2f} | {full - alone:.2f} |"
                print(line, f"(runs: {times})", flush=True)
                lines.append(line)
                del sets
    combine_dropped(False)
    tb.TritonLaunch.__init__ = _init
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
