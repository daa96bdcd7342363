"""Issue 7 (session 37, prepared without a GPU): GluonKernel.ready_parts against the shipped narrow bf16 kernel. At
T=1 a program waits ~4.2K cycles for its first tile, then runs S^T (~920 cycles) on it; with the tile's columns in
ready_parts parts, each on a barrier of its own, M issues each part's S^T wgmmas once the part is in, so most of S^T
runs while the last parts land. Also with two gathering warp groups (loaders=2, the narrow kernel's num_warps=12,
session 36: each gathers half the parts). Each variant of a row's shipped config (a variant its config cannot take,
e.g. 4 parts with one stage, is left out) is checked against the reference on poisoned inputs (random top-k lengths
among them), then all are timed in rotating orders (CUDA-graph replay over rotating inputs, median us per call). Rows
with long lists (T=256 H=16) show what the extra barriers cost where the tile is usually in before M needs it.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/ready_parts.py [--rows bf16:1:128,...] [--variants rp2=ready_parts=2,...] [--reps 3]
"""
import argparse
import dataclasses
import statistics

import torch

from gluon_variant import parse_variant, with_fields  # (the script's folder)
from variant_rows import rotating, timed_in_orders
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.gpu_measure import check, make_inputs, timing_sets
from sparsemla.gen.spec import config_label
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config

# (the suite rows whose H200 entries run the narrow kernel: T=1 with 128 and 64 heads, T=4 and 16 with 32 and 16)
ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:32,bf16:16:16,bf16:256:16"
VARIANTS = "rp2=ready_parts=2,rp4=ready_parts=4,l2=loaders=2,l2rp2=loaders=2+ready_parts=2"


def applies(spec, cfg, fields: dict) -> bool:
    """Whether the Gluon kernel of ``cfg`` exists with ``fields`` replaced."""
    try:
        dataclasses.replace(GluonKernel.for_config(spec, cfg), **fields)
        return True
    except ValueError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--variants", default=VARIANTS, help="NAME=FIELD=VALUE[+FIELD=VALUE],...")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    dev = torch.device("cuda")
    named = {"shipped": {}}
    for item in args.variants.split(","):
        name, fields = item.split("=", 1)
        named[name] = parse_variant(fields)
    lines = ["| format | T | H | config | " + " | ".join(f"{n} us" for n in named) + " | best / shipped |",
             "|---|---|---|---|" + "---|" * (len(named) + 1)]
    for row in args.rows.split(","):
        fmt, T, H = row.split(":")
        T, H = int(T), int(H)
        spec = suite_spec(fmt, H, "sm90")
        cfg = select_config(spec, T, dev)
        if not cfg.gluon or cfg.block_h == 64:
            print(f"{row}: the shipped entry ({config_label(cfg)}) is not the narrow Gluon kernel; skipped", flush=True)
            continue
        names = [n for n, f in named.items() if applies(spec, cfg, f)]
        kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
        g = torch.Generator(device=dev).manual_seed(T * H)
        lengths = torch.randint(0, spec.topk + 1, (T,), generator=g, device=dev, dtype=torch.int32)
        failed = set()
        for name in names:
            with_fields(named[name] or None)
            res = [check(spec, cfg, kw), check(spec, cfg, dict(kw, topk_length=lengths))]
            if not all(r.ok for r in res):
                failed.add(name)
            print(f"{row} {config_label(cfg)} {name}: " + ", ".join(
                f"{'ok' if r.ok else 'FAILED ' + r.reason} (rel err {r.error:.2e})" for r in res), flush=True)
        del kw
        sets = timing_sets(spec, T, dev)
        setups = {n: (lambda f=named[n]: with_fields(f or None)) for n in names}
        times = timed_in_orders(sets, cfg, setups, rotating(len(names), args.reps), skip=failed)
        with_fields(None)
        med = {n: statistics.median(v) for n, v in times.items() if v}
        cells = [(f"{med[n]:.2f}" if n in med else "FAILED" if n in failed else "-") for n in named]
        best = min((n for n in med if n != "shipped"), key=med.get, default=None)
        ratio = f"{best} {med['shipped'] / med[best]:.3f}x" if best and "shipped" in med else "-"
        lines.append(f"| {fmt} | {T} | {H} | {config_label(cfg)} | " + " | ".join(cells) + f" | {ratio} |")
        print(lines[-1], f"(runs: {times})", flush=True)
        del sets
        torch.cuda.empty_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
