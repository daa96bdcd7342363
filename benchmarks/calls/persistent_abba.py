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
import statistics

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config

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
    lines = ["| format | T | H | config | units | shipped | persistent | shipped / persistent |", "|" + "---|" * 8]
    for row in args.rows.split(","):
        fmt, T, H = row.split(":")
        T, H = int(T), int(H)
        spec = suite_spec(fmt, H, "sm90")
        cfg = select_config(spec, T, dev)
        units = T * -(-H // cfg.block_h) * cfg.num_splits
        kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
        ok = {}
        for on in (False, True):
            persistent(on)
            res = check(spec, cfg, kw)
            ok[on] = "" if res.ok else f" FAILED: {res.reason}"
        sets = timing_sets(spec, T, dev)
        times = {False: [], True: []}
        for rep in range(args.reps):
            for on in ((False, True) if rep % 2 == 0 else (True, False)):
                if not ok[on]:
                    persistent(on)
                    times[on].append(time_calls(_calls(sets, cfg))[0])
        med = {on: statistics.median(v) for on, v in times.items() if v}
        cells = [(f"{med[on]:.2f}" if on in med else "-") + ok[on] for on in (False, True)]
        ratio = med[False] / med[True] if len(med) == 2 else float("nan")
        label = f"h{cfg.block_h} s{cfg.num_splits} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
        line = f"| {fmt} | {T} | {H} | {label} | {units} | " + " | ".join(cells) + f" | {ratio:.3f} |"
        print(line, f"(runs: {times})", flush=True)
        lines.append(line)
        del sets, kw
        torch.cuda.empty_cache()
    tb._persistent = _rule
    api.clear_call_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
