"""Issue 4 experiment (session 11, call 6): the lead path's copy grid and the side stream's priority.

The default (16 warps x 2 programs per SM, half the register file) beat 8 x 4 beside the lead share,
and grids that fill the register file lost. This times whole touched page_split calls in CUDA graphs
on the paging benchmark's pools, with the lead share, for more grids (16 x 1, 16 x 3, 8 x 2), lead
shares 1/4 and 1/16, and the lead copy's side stream at high priority.
Run on the GPU after `pip install .`: python3 benchmarks/calls/proto_lead_grid.py
"""
import dataclasses
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_paging import DEV, ROW, split_pools, timed, touched_tokens  # noqa: E402

from sparsemla.gen.paging import PageSplitSpec  # noqa: E402
from sparsemla.runtime import paging  # noqa: E402

P, D = 256, 64


def main():
    gen = torch.Generator(device=DEV).manual_seed(0)
    n, src, dst = split_pools(gen, 2.0, P, D)
    tok = touched_tokens(n, P, n // 16, (256, 2048), gen)
    touched = int(torch.unique(tok[tok >= 0] // P).numel())
    near = touched_tokens(n, P, touched, (256, 2048), gen, consecutive=True)
    mid = touched_tokens(n, P, n // 16, (64, 2048), gen)
    few = touched_tokens(n, P, 4, (256, 2048), gen)
    nbytes = touched * P * ROW
    a, b = src.view(-1)[:nbytes], dst.view(-1)[:nbytes]
    copy_us = timed(lambda: b.copy_(a), 10, 20)["us"]
    print(f"copy_ of {nbytes / 1e6:.1f} MB: {copy_us:.2f} us", flush=True)
    base = PageSplitSpec(P, D, "sm90").default_config(touched=True)
    variants = [("default (16 x 2, lead 1/8)", {}, 0), ("16 x 1", dict(programs_per_sm=1), 0),
                ("16 x 3", dict(programs_per_sm=3), 0), ("8 x 2", dict(num_warps=8, programs_per_sm=2), 0),
                ("lead 1/4", dict(lead_split=4), 0), ("lead 1/16", dict(lead_split=16), 0),
                ("side stream high priority", {}, -1), ("8 x 4, side stream high priority",
                                                        dict(num_warps=8, programs_per_sm=4), -1)]
    rows = []
    for name, change, priority in variants:
        cfg = dataclasses.replace(base, **change)
        paging.page_split(src, src_page_size=P, touched_indices=tok, out=dst, config=cfg)  # state for cfg
        state = paging.page_list_of(src.device)
        state.side = torch.cuda.Stream(priority=priority)
        times = []
        for ids in (tok, near, mid, few):
            times.append(timed(lambda: paging.page_split(src, src_page_size=P, touched_indices=ids, out=dst,
                                                         config=cfg), 10, 20)["us"])
        rows.append((name, times))
        print(f"  {name:36s} " + " ".join(f"{t:7.2f}" for t in times) + f"  ({copy_us / times[0]:.3f} of copy_)",
              flush=True)
        state.side = torch.cuda.Stream()
    print("\n| variant | scattered | consecutive | 131K ids | 4 pages |\n|---|---|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t[0]:.2f} ({copy_us / t[0]:.3f}) | {t[1]:.2f} | {t[2]:.2f} | {t[3]:.2f} |")


if __name__ == "__main__":
    main()
