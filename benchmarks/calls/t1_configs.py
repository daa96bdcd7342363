"""Issue 7 (session 36): with bfloat16 split-K partials in both Gluon kernels (runtime/triton_backend.parts_bf16_for),
which config is fastest at T=1 with 128 and 64 heads? Session 19 measured 32-head programs with float32 partials
(slower than 16-head ones); session 36's call 1 found the wide kernel's bfloat16 partials 1.05-1.21x faster than
its float32 ones. Each candidate is checked against the reference (gen.gpu_measure.check, poisoned inputs), then
timed in rotating orders (CUDA-graph replay over rotating inputs, median us per call). The config is passed
explicitly, so the answer does not depend on which card's table is installed (any sm90 card). --tokens and
--candidates (block_h:splits:stages[:warps],...) time other rows and configs, e.g. the wide kernel's split counts at
T=4, or 12 warps (a narrow kernel with two loading warp groups).
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/t1_configs.py [--formats bf16,bf16_nope] [--heads 128,64] [--tokens 1]
                                         [--candidates 64:8:2,64:16:2] [--reps 4]
"""
import argparse
import statistics

import torch

from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.spec import Config, config_label
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config
from variant_rows import rotating  # (the script's folder)

# (block_h, num_splits, num_stages): 16-head programs with 8-32 splits, one or two stages; 32- and 64-head ones
CANDIDATES = "16:8:2,16:16:2,16:16:1,16:32:1,32:16:2,32:32:2,64:16:2,64:32:2"


def candidate(text: str) -> Config:
    """A Gluon config from "block_h:num_splits:num_stages[:num_warps]" (64 keys a tile; 8 warps unless given)."""
    block_h, splits, stages, warps = (list(map(int, text.split(":"))) + [8])[:4]
    return Config(block_h, 64, splits, warps, stages, gluon=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default="bf16,bf16_nope")
    ap.add_argument("--heads", default="128,64")
    ap.add_argument("--tokens", default="1")
    ap.add_argument("--candidates", default=CANDIDATES, help="block_h:num_splits:num_stages[:num_warps],...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    dev = torch.device("cuda")
    candidates = [candidate(c) for c in args.candidates.split(",")]
    lines = ["| format | T | H | config | programs | check | rel err | us | shipped / this |",
             "|---|---|---|---|---|---|---|---|---|"]
    for fmt, T, H in ((f, T, H) for f in args.formats.split(",") for T in map(int, args.tokens.split(","))
                      for H in map(int, args.heads.split(","))):
        spec = suite_spec(fmt, H, "sm90")
        shipped = select_config(spec, T, dev)
        cfgs = [shipped] + [c for c in candidates if c != shipped]
        kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
        status, errors = {}, {}
        for c in cfgs:
            try:
                res = check(spec, c, kw)
                status[c], errors[c] = ("ok" if res.ok else f"FAILED: {res.reason}"), f"{res.error:.2e}"
            except Exception as e:  # noqa: BLE001 (a config that does not build is a result)
                status[c], errors[c] = f"{type(e).__name__}: {str(e)[:120]}", "-"
        del kw
        sets = timing_sets(spec, T, dev)
        good = [c for c in cfgs if status[c] == "ok"]
        times = {c: [] for c in good}
        for order in rotating(len(good), args.reps):
            for i in order:
                times[good[i]].append(time_calls(_calls(sets, good[i]))[0])
        med = {c: statistics.median(v) for c, v in times.items()}
        for c in cfgs:
            us = f"{med[c]:.2f}" if c in med else "-"
            ratio = f"{med[shipped] / med[c]:.3f}" if c in med and shipped in med else "-"
            label = config_label(c) + (" (shipped)" if c == shipped else "")
            line = f"| {fmt} | {T} | {H} | {label} | {T * -(-H // c.block_h) * c.num_splits} | {status[c]} | " \
                   f"{errors[c]} | {us} | {ratio} |"
            print(line, f"(runs: {[round(t, 2) for t in times.get(c, [])]})", flush=True)
            lines.append(line)
        del sets
        torch.cuda.empty_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
