"""Issue 7 experiment (session 21): the split-K combine in the Gluon kernel (the template's FUSED).

With FUSED the splits of one token and head block take tickets as they finish; all but the last write their
partials and count them written, the last merges them with its own accumulator and writes the output: no
combine kernel, and one partial fewer written and read. Every suite row (formats, heads, tokens below)
whose tuned config is a Gluon kernel with 2 to 16 splits is checked against the reference with FUSED
(poisoned inputs, gen.gpu_measure.check), then timed without it (the combine kernel, with PDL where the
runtime's rule takes it) and with it, interleaved twice (gen.gpu_measure.time_calls: CUDA-graph replay over
rotating inputs, as a tuning trial), us per call. Each mode is forced, whatever runtime/triton_backend._fused
would choose; each row is checked again after the timed CUDA-graph replays (the counters each launch must
leave at 0). Rows stop being started once --budget seconds have passed.
Run on the GPU after `pip install .`: python3 benchmarks/calls/fused_combine.py [--formats bf16,fp8 ...]
"""
import argparse
import time

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config


def forced(fused: bool):
    """Make the runtime's choice ``fused`` (until the next call of forced)."""
    tb._fused = (lambda config, T, num_heads: True) if fused else (lambda config, T, num_heads: False)
    api.clear_call_cache()  # (a prepared launch keeps the choice it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="16,32,64,128")
    ap.add_argument("--tokens", default="16,32,64")
    ap.add_argument("--max-splits", type=int, default=16)
    ap.add_argument("--budget", type=float, default=1e9)
    args = ap.parse_args()
    start = time.time()
    dev = torch.device("cuda")
    rule = tb._fused
    lines = ["| format | H | T | config | grid | combine kernel | fused | ratio | check |",
             "|---|---|---|---|---|---|---|---|---|"]
    for T in map(int, args.tokens.split(",")):
        for fmt in args.formats.split(","):
            for H in map(int, args.heads.split(",")):
                if time.time() - start > args.budget:
                    print(f"  budget spent: {fmt} H={H} T={T} and later rows not run", flush=True)
                    break
                spec = suite_spec(fmt, H, "sm90")
                cfg = select_config(spec, T, dev)
                S = cfg.num_splits
                grid = T * -(-H // cfg.block_h) * S
                if not (cfg.gluon and 2 <= S <= args.max_splits):
                    print(f"  {fmt} H={H} T={T}: {cfg}: not a Gluon split grid", flush=True)
                    continue
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                forced(True)
                res = check(spec, cfg, kw)
                ok = "ok" if res.ok else f"FAILED: {res.reason}"
                sets = timing_sets(spec, T, dev)
                times = {False: [], True: []}
                for _ in range(2):
                    for fused in (False, True):
                        forced(fused)
                        times[fused].append(time_calls(_calls(sets, cfg))[0])
                forced(True)  # checked again after the replays: every launch left the counters at 0
                again = check(spec, cfg, kw)
                ok += "" if again.ok else f", after the replays FAILED: {again.reason}"
                off, on = min(times[False]), min(times[True])
                label = f"h{cfg.block_h} s{S} st{cfg.num_stages} gl"
                line = f"| {fmt} | {H} | {T} | {label} | {grid} | {off:.2f} | {on:.2f} | {off / on:.3f} | {ok} |"
                print(line, f"(runs: {times[False]} / {times[True]})", flush=True)
                lines.append(line)
                del sets, kw
    tb._fused = rule
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
