"""Issue 7 experiment (sessions 21, 22): the split-K combine in the Gluon kernel (the template's FUSED and SPREAD).

With FUSED the splits of one token and head block take tickets as they finish; all but the last write their
partials and count them written, the last merges them with its own accumulator and writes the output: no
combine kernel, and one partial fewer written and read. Every suite row (formats, heads, tokens below)
whose tuned config is a Gluon kernel with 2 to 16 splits is checked against the reference with FUSED
(poisoned inputs, gen.gpu_measure.check), then timed without it (the combine kernel, with PDL where the
runtime's rule takes it) and with it, interleaved twice (gen.gpu_measure.time_calls: CUDA-graph replay over
rotating inputs, as a tuning trial), us per call. Each mode is forced, whatever runtime/triton_backend._fused
would choose; each row is checked again after the timed CUDA-graph replays (the counters each launch must
leave at 0). Rows stop being started once --budget seconds have passed.
Session 22 added SPREAD (every split writes its partials and the splits share the merge, heads claimed
from a counter): --modes picks the modes timed (kernel: the combine kernel; fused: FUSED; spread: SPREAD),
the last one is the one checked.
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


def forced(mode: str):
    """Make the runtime's merge ``mode`` (kernel, fused or spread) until the next call of forced."""
    tb._fused = lambda config, T, num_heads: mode == "fused"
    tb._spread = lambda config, T, num_heads, grid, device: mode == "spread"
    api.clear_call_cache()  # (a prepared launch keeps the choice it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="16,32,64,128")
    ap.add_argument("--tokens", default="16,32,64")
    ap.add_argument("--max-splits", type=int, default=16)
    ap.add_argument("--min-splits", type=int, default=2)
    ap.add_argument("--modes", default="kernel,fused")
    ap.add_argument("--budget", type=float, default=1e9)
    args = ap.parse_args()
    modes = args.modes.split(",")
    start = time.time()
    dev = torch.device("cuda")
    rules = tb._fused, tb._spread
    lines = ["| format | H | T | config | grid | " + " | ".join(modes) + f" | {modes[0]}/{modes[-1]} | check |",
             "|---|---|---|---|---|" + "---|" * len(modes) + "---|---|"]
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
                if not (cfg.gluon and args.min_splits <= S <= args.max_splits):
                    print(f"  {fmt} H={H} T={T}: {cfg}: not a Gluon split grid", flush=True)
                    continue
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                forced(modes[-1])
                res = check(spec, cfg, kw)
                ok = "ok" if res.ok else f"FAILED: {res.reason}"
                sets = timing_sets(spec, T, dev)
                times = {m: [] for m in modes}
                for _ in range(2):
                    for m in modes:
                        forced(m)
                        times[m].append(time_calls(_calls(sets, cfg))[0])
                forced(modes[-1])  # checked again after the replays: every launch left the counters at 0
                again = check(spec, cfg, kw)
                ok += "" if again.ok else f", after the replays FAILED: {again.reason}"
                best = [min(times[m]) for m in modes]
                label = f"h{cfg.block_h} s{S} st{cfg.num_stages} gl"
                line = (f"| {fmt} | {H} | {T} | {label} | {grid} | " + " | ".join(f"{b:.2f}" for b in best)
                        + f" | {best[0] / best[-1]:.3f} | {ok} |")
                print(line, f"(runs: {times})", flush=True)
                lines.append(line)
                del sets, kw
    tb._fused, tb._spread = rules
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
