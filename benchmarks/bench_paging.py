"""GPU benchmark of the page and index kernels: correctness against the PyTorch references (eager and
replayed from CUDA graphs), then timings inside captured CUDA graphs.

  python benchmarks/bench_paging.py [--quick] [--no-sweep] [--out DIR]

Timing: a CUDA graph holding ``inner`` back-to-back calls, replayed; each replay event-timed; the
median of the replays divided by ``inner``. The eager column times the same ``inner`` calls launched
from Python (host overhead included), as a secondary number.
Rows: page_split 256 -> 64 over a ~2 GB MODEL1 pool, all pages, a partly touched pool and ids that
all fall in 4 pages (the touched path's fixed cost) (GB/s as bytes read + written, padding excluded), each next to a torch device-to-device copy of the same bytes
(``copy_``, and an elementwise copy kernel on the SMs) captured the same way; target: page_split at
>= 80% of the copy_ bandwidth. convert_indices at T=256, topk=2048 (target: under 5 us);
pack_valid_prefix at T=256, W=2048. The sweep times a few configs of the two kernels with targets.
Writes benchmarks/results/paging_<gpu>.json and prints the Markdown table last. Works with Triton 3.6
and newer (it only calls sparsemla).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time

import torch

import sparsemla
from sparsemla.gen.layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES, model1_page_bytes
from sparsemla.gen.paging import ConvertIndicesSpec, PagingConfig, PageSplitSpec
from sparsemla.gen.paging_tune import capture_graph as capture  # (the tuner's timing: the same graphs)
from sparsemla.gen.paging_tune import median_per_call as _median_us
from sparsemla.gen.render import load_module
from sparsemla.runtime import paging
from sparsemla.runtime.api import device_arch
from sparsemla.runtime.paging import (convert_indices_reference, pack_valid_prefix_reference,
                                      page_split_reference)

DEV = torch.device("cuda")
ROW = M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES  # bytes a token's rows take (data + scale)
SPLIT_TARGET, CONVERT_TARGET_US = 0.8, 5.0


def timed(fn, inner: int, repeats: int) -> dict:
    """us per call: from a graph of ``inner`` calls (``us``) and launched eagerly (``eager_us``)."""
    graph = capture(fn, inner)
    us = _median_us(graph.replay, inner, repeats)
    del graph

    def eager():
        for _ in range(inner):
            fn()
    eager_us = _median_us(eager, inner, max(3, repeats // 4))
    return dict(us=us, eager_us=eager_us, inner=inner)


def make_pool(n_pages: int, page_size: int, gen) -> torch.Tensor:
    pool = torch.empty(n_pages, model1_page_bytes(page_size), dtype=torch.uint8, device=DEV)
    return pool.random_(0, 256, generator=gen)  # on the device: no 2 GB host tensor


def split_pools(gen, pool_gb: float, P: int = 256, D: int = 64):
    """(n, src, dst): a random pool of n MODEL1 pages of P tokens filling ``pool_gb`` GB, and a zeroed
    destination pool of its pages split into D-token ones."""
    n = int(pool_gb * 1e9) // model1_page_bytes(P)
    return n, make_pool(n, P, gen), torch.zeros(n * P // D, model1_page_bytes(D), dtype=torch.uint8, device=DEV)


def convert_problem(T, topk, page_size, num_reqs, max_blocks, gen):
    req = torch.randint(0, num_reqs, (T,), device=DEV, dtype=torch.int32, generator=gen)
    table = torch.randperm(num_reqs * max_blocks, device=DEV, generator=gen).to(torch.int32)
    table = table.view(num_reqs, max_blocks)
    table[:, -max_blocks // 8:] = -1  # unassigned tail blocks
    local = torch.randint(-1, max_blocks * page_size, (T, topk), device=DEV, dtype=torch.int32,
                          generator=gen)
    return req, table, local


def touched_tokens(n_pages, P, hot_pages, shape, gen, invalid=0.1, consecutive=False):
    """Token ids of ``shape`` over ``hot_pages`` random source pages (``consecutive``: a run of
    consecutive ones), a fraction ``invalid`` -1."""
    hot = torch.randperm(n_pages, device=DEV, generator=gen)[:hot_pages]
    if consecutive:
        hot = torch.arange(hot_pages, device=DEV) + int(torch.randint(0, n_pages - hot_pages + 1, (1,)))
    tok = hot[torch.randint(0, hot.numel(), shape, device=DEV, generator=gen)] * P
    tok = (tok + torch.randint(0, P, tok.shape, device=DEV, generator=gen)).to(torch.int32)
    tok[torch.rand(tok.shape, device=DEV, generator=gen) < invalid] = -1
    return tok


def check_correctness(gen) -> list[str]:
    """Each function on CUDA against its reference; returns the names checked (raises on a mismatch)."""
    checked = []
    for page_size, stride in ((64, None), (1, None), (16, 24)):
        req, table, local = convert_problem(37, 2048, page_size, 5, 64, gen)
        req[0] = 99  # a request past the table
        local[1] = -1  # a row with nothing valid
        for compact in (False, True):
            # One pass per row; with a block under topk, chunks and a fill pass.
            for cfg in (None, PagingConfig(256, 4)) if page_size == 64 else (None,):
                got = paging.convert_indices(req, table, local, page_size=page_size, block_stride_rows=stride,
                                             return_valid_counts=compact, config=cfg)
                want = convert_indices_reference(req, table, local, page_size=page_size,
                                                 block_stride_rows=stride, return_valid_counts=compact)
                for g, w in zip(*(x if compact else (x,) for x in (got, want))):
                    assert torch.equal(g, w), f"convert_indices page_size={page_size} compact={compact} {cfg}"
            checked.append(f"convert_indices p{page_size} compact={compact}")
    slots = torch.randint(-1, 1 << 20, (33, 2048), device=DEV, dtype=torch.int32, generator=gen)
    lens = torch.randint(0, 2100, (33,), device=DEV, generator=gen)
    indptr = torch.zeros(34, dtype=torch.int32, device=DEV)
    indptr[1:] = torch.cumsum(lens, 0)
    assert torch.equal(sparsemla.pack_valid_prefix(slots, indptr), pack_valid_prefix_reference(slots, indptr))
    checked.append("pack_valid_prefix")
    for P in (128, 256, 512):
        N = 600
        src = make_pool(N, P, gen)
        shape = (N * P // 64, model1_page_bytes(64))
        got = sparsemla.page_split(src, src_page_size=P, out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        want = page_split_reference(src, src_page_size=P, out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        assert torch.equal(got, want), f"page_split {P} all pages"
        for tok in (torch.randint(-1, N * P, (3, 5), device=DEV, generator=gen),  # a few pages
                    touched_tokens(N, P, 150, (64, 512), gen),  # many duplicates, more pages than programs
                    touched_tokens(N, P, N, (8, 4096), gen).t(),  # every page, strided int32
                    torch.full((7,), -1, device=DEV, dtype=torch.int64)):  # nothing
            want = page_split_reference(src, src_page_size=P, touched_indices=tok,
                                        out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
            for cfg in (None, PagingConfig(lead_split=8), PagingConfig(lead_split=64, mark_copies=2, chunks=8),
                        PagingConfig(mark_copies=2, mark_spacing=128), PagingConfig(tma_stages=2),
                        PagingConfig(lead_split=8, tma_stages=6)):
                got = paging.page_split(src, src_page_size=P, touched_indices=tok, config=cfg,
                                        out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
                assert torch.equal(got, want), f"page_split {P} touched, {cfg}"
        checked.append(f"page_split {P}->64")
    # The TMA copy at other destination page sizes (boxes of 16..64 rows; 128: 3 stages of 75 KB fit)
    for P, D in ((256, 128), (128, 16), (64, 32)):
        src = make_pool(300, P, gen)
        shape = (300 * P // D, model1_page_bytes(D))
        tok = touched_tokens(300, P, 120, (16, 512), gen)
        want = page_split_reference(src, src_page_size=P, dst_page_size=D, touched_indices=tok,
                                    out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        for cfg in (PagingConfig(tma_stages=3), PagingConfig(lead_split=4, tma_stages=8)):
            try:  # (a fault in the kernel surfaces here, named, not at some later call)
                got = paging.page_split(src, src_page_size=P, dst_page_size=D, touched_indices=tok, config=cfg,
                                        out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
                torch.cuda.synchronize()
            except Exception as e:
                raise RuntimeError(f"page_split {P}->{D} touched, {cfg}: {e}") from e
            assert torch.equal(got, want), f"page_split {P}->{D} touched, {cfg}"
        checked.append(f"page_split {P}->{D} touched, TMA copy")
    spec = PageSplitSpec(256, 64, device_arch(DEV))
    for cfg in (None, dataclasses.replace(spec.default_config(touched=True), mark_check=True, chunks=8),
                dataclasses.replace(spec.default_config(touched=True), mark_claim=True, chunks=4,
                                    lead_split=0),
                dataclasses.replace(spec.default_config(touched=True), lead_min_ids=0),  # 8K ids: lead path
                dataclasses.replace(spec.default_config(touched=True), lead_split=0)):
        checked += check_graph_replay(gen, cfg)
    return checked


def check_graph_replay(gen, config=None) -> list[str]:
    """page_split of touched pages (with ``config``, None: the default) and compacting
    convert_indices captured once, inputs changed in place between replays: every replay gives
    the reference result (page_split's marks and claims are back to zero after each call)."""
    P, N = 256, 500
    src = make_pool(N, P, gen)
    out = torch.full((N * P // 64, model1_page_bytes(64)), 0xA5, dtype=torch.uint8, device=DEV)
    tok = touched_tokens(N, P, 40, (32, 256), gen)
    req, table, local = convert_problem(64, 2048, 64, 4, 40, gen)

    result = []

    def step():
        paging.page_split(src, src_page_size=P, touched_indices=tok, out=out, config=config)
        result[:] = sparsemla.convert_indices(req, table, local, page_size=64, return_valid_counts=True)

    graph = capture(step, 2)  # two calls in one graph: the second sees the state the first left
    for i in range(3):
        tok.copy_(touched_tokens(N, P, 40 + 100 * i, (32, 256), gen))
        local.copy_(convert_problem(64, 2048, 64, 4, 40, gen)[2])
        out.fill_(0xA5)
        graph.replay()
        want = page_split_reference(src, src_page_size=P, touched_indices=tok,
                                    out=torch.full_like(out, 0xA5))
        assert torch.equal(out, want), f"page_split touched, graph replay {i}"
        want_slots, want_counts = convert_indices_reference(req, table, local, page_size=64,
                                                            return_valid_counts=True)
        slots, counts = result  # the outputs of the graph's last call, rewritten by each replay
        assert torch.equal(slots, want_slots) and torch.equal(counts, want_counts), f"convert replay {i}"
    state = paging.page_list_of(src.device)
    assert int(state.marks.abs().sum()) == 0 and int(state.claims.abs().sum()) == 0, "page marks left set"
    return [f"page_split touched ({config or 'default'}) + convert_indices compact, CUDA graph replays"]


def _split_row(kernel, shape, t, moved, copy, best, target=True):
    row = dict(kernel=kernel, shape=shape, **t, gbs=moved / t["us"] / 1e3, of_copy=copy["us"] / t["us"],
               of_best_copy=best["us"] / t["us"])
    if target:
        row.update(target=f">= {SPLIT_TARGET:g} of copy_", meets_target=copy["us"] / t["us"] >= SPLIT_TARGET)
    print(f"  {kernel} | {shape} | {t['us']:.2f} us | {row['of_copy']:.2f} of copy_", flush=True)  # a cut run keeps these
    return row


def _copy_name(cfg) -> str:
    if cfg.tma_stages:
        return f"TMA copy st{cfg.tma_stages}"
    return f"chunk copy x{cfg.chunks}" if cfg.chunks else "list copy"


def touched_breakdown(src, dst, ids, cfg, what: str, inner: int, repeats: int, copy_only=False) -> list[dict]:
    """Kernel times of one touched page_split: the mark kernel alone, mark + compact, and the
    copy alone (on the list the compact left). With mark_claim: the whole call and the copy alone
    (a claim replayed alone finds its pages claimed by the replay before, so it is not timed alone).
    ``copy_only``: the copy alone, on the list of one untimed mark and compact."""
    P = 256
    mod = load_module(PageSplitSpec(P, 64, device_arch(src.device)))
    first, second, copy = paging.touched_launches(mod, src.view(torch.int64), dst.view(torch.int64),
                                                  ids.reshape(-1), src.shape[0], P // 64, cfg)
    copy_name = _copy_name(cfg)
    if copy_only:
        first(), second()
        steps = ((copy_name, copy),)
    elif cfg.mark_claim:
        steps = (("claim + " + copy_name, lambda: (first(), second(), copy())), (copy_name, copy))
    else:
        steps = (("mark", first), ("mark + compact", lambda: (first(), second())), (copy_name, copy))
    out = []
    for label, fn in steps:
        t = timed(fn, inner, repeats)
        if label == "mark":
            second()  # clears the marks the mark-only replays left, and lists the pages again
        out.append(dict(kernel=f"page_split touched: {label}", shape=f"{what}, ids 256x2048", **t, config=str(cfg)))
        print(f"  page_split touched: {label} | {what} | {t['us']:.2f} us | {cfg}", flush=True)
    return out


def bench_page_split(gen, pool_gb: float, repeats: int, sweep: bool) -> tuple[list[dict], list[dict]]:
    P, D = 256, 64
    n, src, dst = split_pools(gen, pool_gb, P, D)
    flat_src, flat_dst = src.view(-1), dst.view(-1)

    def copies(nbytes: int, inner: int, label: str) -> tuple[list[dict], dict, dict]:
        """torch copy_ (device-to-device memcpy) and an elementwise copy kernel of ``nbytes``."""
        a, b = flat_src[:nbytes], flat_dst[:nbytes]
        a64, b64 = a.view(torch.int64), b.view(torch.int64)  # nbytes is a multiple of 8
        copy = timed(lambda: b.copy_(a), inner, repeats)
        sm = timed(lambda: torch.bitwise_or(a64, 0, out=b64), inner, repeats)
        rows = [dict(kernel="torch copy_ (d2d)", shape=label, **copy, gbs=2 * nbytes / copy["us"] / 1e3),
                dict(kernel="torch elementwise copy (SMs)", shape=label, **sm, gbs=2 * nbytes / sm["us"] / 1e3)]
        return rows, copy, min(copy, sm, key=lambda t: t["us"])

    # The copies write into dst: all of them run before page_split fills it.
    moved_all = 2 * n * P * ROW  # data + scale rows read and written; padding is not touched
    rows, copy_all, best_all = copies(moved_all // 2, 2, f"{moved_all / 2e9:.2f} GB")
    # Partly touched: a decode step's top-k ids (T=256 x 2048, 10% -1) over 1/16 of the pages.
    tok = touched_tokens(n, P, max(1, n // 16), (256, 2048), gen)
    touched = int(torch.unique(tok[tok >= 0] // P).numel())
    moved = 2 * touched * P * ROW
    inner = 10
    copy_rows, copy, best = copies(moved // 2, inner, f"{moved / 2e9:.3f} GB")
    # Concentrated: the same ids over 4 pages (a short request): the fixed cost of the touched path.
    few = touched_tokens(n, P, 4, (256, 2048), gen)
    few_moved = 2 * int(torch.unique(few[few >= 0] // P).numel()) * P * ROW
    few_rows, few_copy, few_best = copies(few_moved // 2, 50, f"{few_moved / 2e6:.1f} MB")

    t = timed(lambda: sparsemla.page_split(src, src_page_size=P, out=dst), 2, repeats)
    rows.append(_split_row("page_split 256->64, all pages", f"{n} pages, {moved_all / 2e9:.2f} GB", t,
                           moved_all, copy_all, best_all))
    rows += copy_rows
    # the config each call runs: the GPU's tuned paging table (sparsemla tune-paging) for its number of ids,
    # else the arch's default; the variants below change fields of the 256 x 2048 ids' one
    spec = PageSplitSpec(P, D, device_arch(DEV))
    cfg = paging.tuned_config(spec, "touched", tok.numel(), DEV)
    t = timed(lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst), inner, repeats)
    rows.append(_split_row("page_split 256->64, touched", f"{touched}/{n} pages, ids 256x2048", t, moved,
                           copy, best) | dict(config=str(cfg)))
    rows += few_rows
    t = timed(lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=few, out=dst), 50, repeats)
    rows.append(_split_row("page_split 256->64, touched", "4 pages, ids 256x2048", t, few_moved, few_copy,
                           few_best, target=False) | dict(config=str(paging.tuned_config(spec, "touched", few.numel(), DEV))))
    # The same number of pages, consecutive in the pool: their marks crowd fewer L2 lines.
    near = touched_tokens(n, P, touched, (256, 2048), gen, consecutive=True)
    near_moved = 2 * int(torch.unique(near[near >= 0] // P).numel()) * P * ROW
    # A mid-sized step: 64 x 2048 ids over the same pages (is the lead share worth its two extra
    # kernels there?).
    mid = touched_tokens(n, P, max(1, n // 16), (64, 2048), gen)
    mid_moved = 2 * int(torch.unique(mid[mid >= 0] // P).numel()) * P * ROW
    mid_rows, mid_copy, mid_best = copies(mid_moved // 2, inner, f"{mid_moved / 2e9:.3f} GB")
    rows += mid_rows
    # The default (session 19 on sm90: a lead 1/32 of the ids copied by TMA on a side stream while the
    # rest are marked, from 128K ids) against the session-11 default (the list copy, 16 warps x 2
    # programs per SM, lead 1/8) and the plain path (mark, compact, copy) with either copy, on the four
    # pools. Measured and removed: session 10, the list copy loading its next page id ahead (no gain;
    # lead 1/4..1/64 differ by 1-2 us); session 11, the lead share listed by one program (first 1K-4K
    # ids; 91-94 us scattered). The chunk copy alone is 3 us faster than the list copy (70.7 vs 73.9
    # us scattered) but with the lead share slower (88.6 us), so it is an option for the plain path.
    # Session 30 (an H100): PagingConfig.pdl, the touched path's kernels chained as programmatic dependents, 3-5% slower
    # on the three large pools (benchmarks/results/session30/README.md); removed (commit b395935 has it).
    variants = [dict(tma_stages=0, lead_split=8), dict(lead_split=0), dict(tma_stages=0, lead_split=0)]
    for v in variants:
        mc = dataclasses.replace(cfg, **v)
        label = (f"{_copy_name(mc)}" + ("" if mc.tma_stages else f", w{mc.num_warps} x{mc.programs_per_sm}")
                 + (f", lead 1/{mc.lead_split} from {mc.lead_min_ids} ids" if mc.lead_split else ", no lead"))
        for ids, what, m, cp, bst, target in ((tok, f"{touched}/{n} pages, ids 256x2048", moved, copy, best, True),
                                              (few, "4 pages, ids 256x2048", few_moved, few_copy, few_best, False),
                                              (near, f"{touched} consecutive pages, ids 256x2048", near_moved, copy,
                                               best, True),
                                              (mid, "ids 64x2048", mid_moved, mid_copy, mid_best, False)):
            t = timed(lambda: paging.page_split(src, src_page_size=P, touched_indices=ids, out=dst, config=mc),
                      inner, repeats)
            rows.append(_split_row(f"page_split 256->64, touched, {label}", what, t,
                                   m, cp, bst, target=target) | dict(config=str(mc)))
    t = timed(lambda: paging.page_split(src, src_page_size=P, touched_indices=near, out=dst), inner, repeats)
    rows.append(_split_row("page_split 256->64, touched", f"{touched} consecutive pages, ids 256x2048", t,
                           near_moved, copy, best) | dict(config=str(cfg)))
    t = timed(lambda: paging.page_split(src, src_page_size=P, touched_indices=mid, out=dst), inner, repeats)
    rows.append(_split_row("page_split 256->64, touched", "ids 64x2048", t, mid_moved, mid_copy, mid_best,
                           target=False) | dict(config=str(paging.tuned_config(spec, "touched", mid.numel(), DEV))))
    # The plain path's kernels, one by one.
    list_cfg = dataclasses.replace(cfg, tma_stages=0)
    for ids, what in ((tok, f"{touched}/{n} pages"), (few, "4 pages"), (near, f"{touched} consecutive pages")):
        rows += touched_breakdown(src, dst, ids, cfg, what, inner, repeats)
        rows += touched_breakdown(src, dst, ids, list_cfg, what, inner, repeats, copy_only=True)
    sweep_rows = []
    if sweep:
        # the TMA copy's stages, and the list copy's grid (with the lead share as configured)
        for c in ([dataclasses.replace(cfg, tma_stages=st) for st in (2, 4, 6)]
                  + [dataclasses.replace(cfg, tma_stages=0, num_warps=w, programs_per_sm=k)
                     for w, k in ((4, 16), (8, 4), (16, 2))]):
            ts = timed(lambda: paging.page_split(src, src_page_size=P, touched_indices=tok, out=dst, config=c),
                       inner, repeats)
            knobs = (f"tma_stages={c.tma_stages}" if c.tma_stages
                     else f"num_warps={c.num_warps}, programs_per_sm={c.programs_per_sm}")
            sweep_rows.append(_split_row(f"page_split touched, {_copy_name(c)}", knobs, ts, moved, copy, best)
                              | dict(config=str(c)))

    # The graph-replayed result is right: spot-check pages against the reference.
    for i in torch.randint(0, n, (8,), generator=torch.Generator().manual_seed(0)).tolist():
        want = page_split_reference(src[i:i + 1], src_page_size=P)
        got = dst[i * (P // D):(i + 1) * (P // D)]
        pad = D * ROW
        assert torch.equal(got[:, :pad], want[:, :pad]), f"page_split page {i} after replay"
    src = dst = flat_src = flat_dst = None  # (the lambdas above share these cells)
    torch.cuda.empty_cache()
    return rows, sweep_rows


def bench_indices(gen, repeats: int, sweep: bool) -> tuple[list[dict], list[dict]]:
    T, K, ps = 256, 2048, 64
    req, table, local = convert_problem(T, K, ps, 64, 2048, gen)
    spec = ConvertIndicesSpec(ps, K, device_arch(DEV))
    rows, sweep_rows = [], []

    def convert_row(name, shape, t, cfg):
        return dict(kernel=name, shape=shape, **t, gbs=T * K * 8 / t["us"] / 1e3, config=str(cfg),
                    target=f"< {CONVERT_TARGET_US:g} us", meets_target=t["us"] < CONVERT_TARGET_US)

    for compact in (False, True):
        cfg = paging.tuned_config(spec, "compact" if compact else "plain", T, DEV)
        t = timed(lambda: sparsemla.convert_indices(req, table, local, page_size=ps,
                                                    return_valid_counts=compact), 100, repeats)
        rows.append(convert_row(f"convert_indices{' (compact + counts)' if compact else ''}",
                                f"T={T}, topk={K}, page {ps}", t, cfg))
    if sweep:
        for block, warps in ((2048, 4), (2048, 8), (2048, 16), (1024, 4)):
            c = PagingConfig(block, warps)
            t = timed(lambda: paging.convert_indices(req, table, local, page_size=ps, return_valid_counts=True,
                                                     config=c), 100, repeats)
            sweep_rows.append(convert_row("convert_indices compact", f"block={block}, num_warps={warps}", t, c))
    W = 2048
    slots = torch.randint(-1, 1 << 24, (T, W), device=DEV, dtype=torch.int32, generator=gen)
    lens = torch.randint(0, W + 1, (T,), device=DEV, generator=gen)
    indptr = torch.zeros(T + 1, dtype=torch.int32, device=DEV)
    indptr[1:] = torch.cumsum(lens, 0)
    out = torch.empty(T * W, dtype=torch.int32, device=DEV)
    t = timed(lambda: sparsemla.pack_valid_prefix(slots, indptr, out=out), 100, repeats)
    n = int(lens.sum())
    rows.append(dict(kernel="pack_valid_prefix (out=)", shape=f"T={T}, W={W}, {n} kept", **t,
                     gbs=2 * n * 4 / t["us"] / 1e3))
    return rows, sweep_rows


def markdown(rows) -> str:
    lines = ["| kernel | shape | us (graph) | GB/s | of copy_ | of best copy | us (eager) | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        of = f"{r['of_copy']:.2f}" if "of_copy" in r else ""
        best = f"{r['of_best_copy']:.2f}" if "of_best_copy" in r else ""
        note = f"target {r['target']}: {'met' if r['meets_target'] else 'MISSED'}" if "target" in r else ""
        gbs = f"{r['gbs']:,.0f}" if "gbs" in r else ""  # (not for the per-kernel breakdown rows)
        lines.append(f"| {r['kernel']} | {r['shape']} | {r['us']:.2f} | {gbs} | {of} | {best} | "
                     f"{r['eager_us']:.2f} | {note} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
                    help="folder for paging_<gpu>.json")
    ap.add_argument("--quick", action="store_true", help="a 0.25 GB pool and fewer repeats")
    ap.add_argument("--no-sweep", action="store_true", help="skip the config sweep")
    args = ap.parse_args()
    import triton

    t0 = time.time()
    gen = torch.Generator(device=DEV).manual_seed(0)
    repeats = 5 if args.quick else 20
    checked = check_correctness(gen)
    gpu = torch.cuda.get_device_name()
    print(f"correct on {gpu}: {', '.join(checked)}")
    split_rows, split_sweep = bench_page_split(gen, 0.25 if args.quick else 2.0, repeats, not args.no_sweep)
    index_rows, index_sweep = bench_indices(gen, repeats, not args.no_sweep)
    rows, sweep = split_rows + index_rows, split_sweep + index_sweep
    result = dict(gpu=gpu, torch=torch.__version__, triton=triton.__version__, python=platform.python_version(),
                  sparsemla=sparsemla.__version__, quick=args.quick, repeats=repeats,
                  timing="CUDA graph of `inner` back-to-back calls, replays event-timed, median / inner; "
                         "eager_us: the same calls launched from Python",
                  checked=checked, rows=rows, sweep=sweep, seconds=round(time.time() - t0, 1))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"paging_{gpu.replace(' ', '_')}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path} ({result['seconds']} s)\n")
    if sweep:
        print("Config sweep (the defaults are in the table below):\n")
        print(markdown(sweep) + "\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
