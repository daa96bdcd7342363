"""Issue 4 experiment (session 21): the lead share listed by one kernel through a bitmap (PagingConfig.lead_bits).

The default touched path (sm90) marks the first 1/32 of the ids, lists their pages with a compact, and copies
those pages by TMA on a side stream while the rest of the ids are marked. Session 19's call 11 measured ~4.6 us
from the call's start to the lead copy's start (two dependent small kernels). With lead_bits one kernel sets a
bit per page of the lead's ids (pages deduplicated per block, a word loaded before its atomic OR) and its last
program to finish lists the set bits in page order: the copy starts one kernel earlier. The rest's mark skips
pages whose bit is set, and the final compact clears the bitmap.

Session 21's call 5 ran it at b9ed8cc (`benchmarks/results/session21/call5_lead_bits.log`): lead_bits was 13 us
slower on the three large pools (scattered 77.1 -> 90.3 us, 0.79 -> 0.68 of copy_) and 17 us slower on 4 pages
(8.8 -> 26.0 us): the last program's listing, one program scanning the bitmap, costs more than the compact
kernel it replaces. PagingConfig.lead_bits and page_lead_kernel were removed after it (b9ed8cc has them), so
this script no longer runs on main.

Each call is checked against the reference first (eager, then after graph replays). Times: a CUDA graph of
back-to-back calls (as bench_paging), replays event-timed, median / inner; the default and lead_bits
interleaved, three times each, on the four pools of bench_paging, beside torch copy_ of the same bytes.
Run on the GPU after `pip install .`: python3 benchmarks/calls/lead_bits.py
"""
import dataclasses
import os
import sys

import torch

from sparsemla.gen.paging import PageSplitSpec
from sparsemla.runtime import paging
from sparsemla.runtime.api import device_arch
from sparsemla.runtime.paging import page_split_reference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_paging import DEV, ROW, _median_us, capture, split_pools, touched_tokens  # noqa: E402

P, D = 256, 64


def graph_us(fn, inner: int) -> float:
    graph = capture(fn, inner)
    us = _median_us(graph.replay, inner, 30)
    del graph
    return us


def main():
    gen = torch.Generator(device=DEV).manual_seed(21)
    n, src, dst = split_pools(gen, 2.0, P, D)
    base = PageSplitSpec(P, D, device_arch(DEV)).default_config(touched=True)
    bits = dataclasses.replace(base, lead_bits=True)
    pools = {"scattered": touched_tokens(n, P, max(1, n // 16), (256, 2048), gen),
             "consecutive": touched_tokens(n, P, max(1, n // 16), (256, 2048), gen, consecutive=True),
             "131K ids": touched_tokens(n, P, max(1, n // 16), (64, 2048), gen),
             "4 pages": touched_tokens(n, P, 4, (256, 2048), gen)}
    flat_src, flat_dst = src.view(-1), dst.view(-1)
    lines = ["| pool | copy_ us | default us | lead_bits us | default of copy_ | lead_bits of copy_ |",
             "|---|---|---|---|---|---|"]
    for name, tok in pools.items():
        moved = int(torch.unique(tok[tok >= 0] // P).numel()) * P * ROW
        inner = 50 if name == "4 pages" else 10
        # correctness: eager (the first eager call per config takes the lead path), then after replays
        small = torch.randperm(n, device=DEV, generator=gen)[:64]
        sub = src[small]
        for cfg in (base, bits):
            sub_tok = tok.clone() % (64 * P)
            want = page_split_reference(sub.cpu(), src_page_size=P, touched_indices=sub_tok.cpu(),
                                        out=torch.zeros(64 * P // D, dst.shape[1], dtype=torch.uint8))
            out = torch.zeros(64 * P // D, dst.shape[1], dtype=torch.uint8, device=DEV)
            graph = capture(lambda: paging.page_split(sub, src_page_size=P, touched_indices=sub_tok, out=out,
                                                      config=cfg), 3)
            out.zero_()
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(out.cpu(), want), (name, cfg)
            del graph
        a, b = flat_src[:moved], flat_dst[:moved]
        times = {"copy": [], "base": [], "bits": []}
        for _ in range(3):
            times["copy"].append(graph_us(lambda: b.copy_(a), inner))
            for key, cfg in (("base", base), ("bits", bits)):
                times[key].append(graph_us(lambda: paging.page_split(src, src_page_size=P, touched_indices=tok,
                                                                     out=dst, config=cfg), inner))
        print(name, {k: [round(x, 2) for x in v] for k, v in times.items()}, flush=True)
        c = min(times["copy"])
        t0, t1 = sorted(times["base"])[1], sorted(times["bits"])[1]  # medians of three
        lines.append(f"| {name} | {c:.1f} | {t0:.1f} | {t1:.1f} | {c / t0:.3f} | {c / t1:.3f} |")
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
