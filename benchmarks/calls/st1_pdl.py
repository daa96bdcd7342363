"""Issue 7 experiment (session 22): T=1 H=128 with one-stage 16-head programs and the PDL combine.

The shipped T=1 H=128 entries run 128 programs of 16 heads with two stages (one program per SM: ~170 KB of
shared memory), and the combine kernel after them, not as a PDL dependent: launched early, its programs
crowd onto the 4 SMs left free (session 20). A one-stage program (num_stages=1: ~95 KB, 128 registers a
thread) leaves room on its SM, so with 128 of them on 132 SMs the combine's programs could wait beside them
on every SM and start as soon as the grid is done. For each format's T=1 H=128 bucket: the shipped config
as the runtime runs it; 16-head programs with one stage and 16 splits, with and without PDL; each checked
against the reference (poisoned inputs, gen.gpu_measure.check) and timed interleaved twice
(gen.gpu_measure.time_calls: CUDA-graph replay over rotating inputs), us per call.
Run on the GPU after `pip install .`: python3 benchmarks/calls/st1_pdl.py [--formats bf16,fp8 --heads 128]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.spec import Config
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config

_rule = tb._pdl


def pdl(mode):
    """The runtime's PDL choice: its rule (None), or forced on or off."""
    tb._pdl = _rule if mode is None else (lambda *rule_args: mode)
    api.clear_call_cache()  # (a prepared launch keeps the choice it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="128")
    ap.add_argument("--splits", default="16")
    args = ap.parse_args()
    dev = torch.device("cuda")
    lines = ["| format | H | T | candidate | us | check |", "|---|---|---|---|---|---|"]
    for fmt in args.formats.split(","):
        for H in map(int, args.heads.split(",")):
            spec = suite_spec(fmt, H, "sm90")
            shipped = select_config(spec, 1, dev)
            cands = [("shipped " + f"h{shipped.block_h} s{shipped.num_splits} st{shipped.num_stages}", shipped, None)]
            for s in map(int, args.splits.split(",")):
                st1 = Config(16, 64, s, 8, 1, gluon=True)
                cands += [(f"h16 s{s} st1, PDL", st1, True), (f"h16 s{s} st1, no PDL", st1, False)]
            kw = make_inputs(spec, 1, dev, slots=1 << 16, poison=True)
            sets = timing_sets(spec, 1, dev)
            ok, times = {}, {name: [] for name, _, _ in cands}
            for name, cfg, mode in cands:
                pdl(mode)
                try:
                    res = check(spec, cfg, kw)
                    ok[name] = "ok" if res.ok else f"FAILED: {res.reason}"
                except Exception as e:  # noqa: BLE001 (a candidate that cannot run is reported, not fatal)
                    ok[name] = f"error: {type(e).__name__}: {str(e)[:120]}"
            for _ in range(2):
                for name, cfg, mode in cands:
                    if ok[name] == "ok":
                        pdl(mode)
                        times[name].append(time_calls(_calls(sets, cfg))[0])
            for name, _, _ in cands:
                us = f"{min(times[name]):.2f}" if times[name] else "-"
                line = f"| {fmt} | {H} | 1 | {name} | {us} | {ok[name]} |"
                print(line, f"(runs: {times[name]})", flush=True)
                lines.append(line)
            del sets, kw
    pdl(None)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
