"""GPU benchmark of the page and index kernels: correctness against the PyTorch references,
then timings inside captured CUDA graphs (replay timed with events, median of repeats).

  python benchmarks/bench_paging.py [--quick] [--out DIR]

Rows: page_split 256 -> 64 over a ~2 GB MODEL1 pool, all pages and a partly touched pool (GB/s as
bytes read + written, and the fraction of a torch device-to-device copy of the same bytes measured
here); convert_indices at T=256, topk=2048 (target: under 5 us); pack_valid_prefix at T=256,
W=2048. Writes benchmarks/results/paging_<gpu>.json and prints a Markdown table last.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics

import torch

import sparsemla
from sparsemla.gen.layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES, model1_page_bytes
from sparsemla.runtime.paging import (convert_indices_reference, pack_valid_prefix_reference,
                                      page_split_reference)

DEV = torch.device("cuda")
ROW = M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES  # bytes a token's rows take (data + scale)


def graph_us(fn, inner: int, repeats: int) -> float:
    """Median microseconds of one ``fn()`` replayed from a CUDA graph holding ``inner`` calls."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (and compile) outside the capture
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(inner):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / inner)
    return statistics.median(times)


def make_pool(n_pages: int, page_size: int, gen) -> torch.Tensor:
    pool = torch.empty(n_pages, model1_page_bytes(page_size), dtype=torch.uint8, device=DEV)
    return pool.random_(0, 256, generator=gen)  # on the device: no 2 GB host tensor


def convert_problem(T, topk, page_size, num_reqs, max_blocks, gen):
    req = torch.randint(0, num_reqs, (T,), device=DEV, dtype=torch.int32, generator=gen)
    table = torch.randperm(num_reqs * max_blocks, device=DEV, generator=gen).to(torch.int32)
    table = table.view(num_reqs, max_blocks)
    table[:, -max_blocks // 8:] = -1  # unassigned tail blocks
    local = torch.randint(-1, max_blocks * page_size, (T, topk), device=DEV, dtype=torch.int32,
                          generator=gen)
    return req, table, local


def check_correctness(gen) -> list[str]:
    """Each function on CUDA against its reference; returns the names checked (raises on a mismatch)."""
    checked = []
    for page_size, stride in ((64, None), (1, None), (16, 24)):
        req, table, local = convert_problem(37, 2048, page_size, 5, 64, gen)
        req[0] = 99  # a request past the table
        for compact in (False, True):
            got = sparsemla.convert_indices(req, table, local, page_size=page_size, block_stride_rows=stride,
                                            return_valid_counts=compact)
            want = convert_indices_reference(req, table, local, page_size=page_size,
                                             block_stride_rows=stride, return_valid_counts=compact)
            for g, w in zip(*(x if compact else (x,) for x in (got, want))):
                assert torch.equal(g, w), f"convert_indices page_size={page_size} compact={compact}"
            checked.append(f"convert_indices p{page_size} compact={compact}")
    slots = torch.randint(-1, 1 << 20, (33, 2048), device=DEV, dtype=torch.int32, generator=gen)
    lens = torch.randint(0, 2100, (33,), device=DEV, generator=gen)
    indptr = torch.zeros(34, dtype=torch.int32, device=DEV)
    indptr[1:] = torch.cumsum(lens, 0)
    assert torch.equal(sparsemla.pack_valid_prefix(slots, indptr), pack_valid_prefix_reference(slots, indptr))
    checked.append("pack_valid_prefix")
    for P in (128, 256, 512):
        src = make_pool(40, P, gen)
        shape = (40 * P // 64, model1_page_bytes(64))
        got = sparsemla.page_split(src, src_page_size=P, out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        want = page_split_reference(src, src_page_size=P, out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        assert torch.equal(got, want), f"page_split {P} all pages"
        tok = torch.randint(-1, 40 * P, (3, 5), device=DEV, generator=gen)
        got = sparsemla.page_split(src, src_page_size=P, touched_indices=tok,
                                   out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        want = page_split_reference(src, src_page_size=P, touched_indices=tok,
                                    out=torch.full(shape, 0xA5, dtype=torch.uint8, device=DEV))
        assert torch.equal(got, want), f"page_split {P} touched"
        checked.append(f"page_split {P}->64")
    return checked


def bench_page_split(gen, pool_gb: float, repeats: int) -> list[dict]:
    P, D = 256, 64
    n = int(pool_gb * 1e9) // model1_page_bytes(P)
    src = make_pool(n, P, gen)
    dst = torch.zeros(n * P // D, model1_page_bytes(D), dtype=torch.uint8, device=DEV)
    total = src.numel()  # == dst.numel(): four 64-token pages take the bytes of one 256-token page
    copy_us = graph_us(lambda: dst.view(-1).copy_(src.view(-1)), 1, repeats)
    copy_gbs = 2 * total / copy_us / 1e3
    rows = [dict(kernel="torch copy_ (d2d)", shape=f"{total / 1e9:.2f} GB", us=copy_us, gbs=copy_gbs,
                 of_copy=1.0)]

    all_us = graph_us(lambda: sparsemla.page_split(src, src_page_size=P, out=dst), 1, repeats)
    moved = 2 * n * P * ROW  # data + scale rows read and written; padding is not touched
    rows.append(dict(kernel="page_split 256->64, all pages", shape=f"{n} pages, {total / 1e9:.2f} GB",
                     us=all_us, gbs=moved / all_us / 1e3, of_copy=moved / all_us / 1e3 / copy_gbs))

    # Partly touched: a decode step's top-k ids (T=256 x 2048, 10% -1) over 1/16 of the pages.
    hot = torch.randperm(n, device=DEV, generator=gen)[: max(1, n // 16)]
    tok = hot[torch.randint(0, hot.numel(), (256, 2048), device=DEV, generator=gen)] * P
    tok = (tok + torch.randint(0, P, tok.shape, device=DEV, generator=gen)).to(torch.int32)
    tok[torch.rand(tok.shape, device=DEV, generator=gen) < 0.1] = -1
    touched_pages = int(torch.unique(tok[tok >= 0] // P).numel())
    part_us = graph_us(lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst),
                       1, repeats)
    moved = 2 * touched_pages * P * ROW
    rows.append(dict(kernel="page_split 256->64, touched", shape=f"{touched_pages}/{n} pages, ids 256x2048",
                     us=part_us, gbs=moved / part_us / 1e3, of_copy=moved / part_us / 1e3 / copy_gbs))

    # The graph-replayed result is right: spot-check pages against the reference.
    for i in torch.randint(0, n, (8,), generator=torch.Generator().manual_seed(0)).tolist():
        want = page_split_reference(src[i:i + 1], src_page_size=P)
        got = dst[i * (P // D):(i + 1) * (P // D)]
        pad = D * ROW
        assert torch.equal(got[:, :pad], want[:, :pad]), f"page_split page {i} after replay"
    del src, dst
    torch.cuda.empty_cache()
    return rows


def bench_indices(gen, repeats: int) -> list[dict]:
    T, K, ps = 256, 2048, 64
    req, table, local = convert_problem(T, K, ps, 64, 2048, gen)
    rows = []
    for compact in (False, True):
        us = graph_us(lambda: sparsemla.convert_indices(req, table, local, page_size=ps,
                                                        return_valid_counts=compact), 100, repeats)
        rows.append(dict(kernel=f"convert_indices{' (compact + counts)' if compact else ''}",
                         shape=f"T={T}, topk={K}, page {ps}", us=us, gbs=T * K * 8 / us / 1e3,
                         target_us=5.0, meets_target=us < 5.0))
    W = 2048
    slots = torch.randint(-1, 1 << 24, (T, W), device=DEV, dtype=torch.int32, generator=gen)
    lens = torch.randint(0, W + 1, (T,), device=DEV, generator=gen)
    indptr = torch.zeros(T + 1, dtype=torch.int32, device=DEV)
    indptr[1:] = torch.cumsum(lens, 0)
    out = torch.empty(T * W, dtype=torch.int32, device=DEV)
    us = graph_us(lambda: sparsemla.pack_valid_prefix(slots, indptr, out=out), 100, repeats)
    n = int(lens.sum())
    rows.append(dict(kernel="pack_valid_prefix (out=)", shape=f"T={T}, W={W}, {n} kept", us=us,
                     gbs=2 * n * 4 / us / 1e3))
    return rows


def markdown(rows) -> str:
    lines = ["| kernel | shape | us | GB/s | of d2d copy | note |", "|---|---|---|---|---|---|"]
    for r in rows:
        of = f"{r['of_copy']:.2f}" if "of_copy" in r else ""
        note = (f"target < {r['target_us']:g} us: {'met' if r['meets_target'] else 'MISSED'}"
                if "target_us" in r else "")
        lines.append(f"| {r['kernel']} | {r['shape']} | {r['us']:.2f} | {r['gbs']:,.0f} | {of} | {note} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
                    help="folder for paging_<gpu>.json")
    ap.add_argument("--quick", action="store_true", help="a 0.25 GB pool and fewer repeats")
    args = ap.parse_args()
    import triton

    gen = torch.Generator(device=DEV).manual_seed(0)
    repeats = 5 if args.quick else 20
    checked = check_correctness(gen)
    print(f"correct on {torch.cuda.get_device_name()}: {', '.join(checked)}")
    rows = bench_page_split(gen, 0.25 if args.quick else 2.0, repeats) + bench_indices(gen, repeats)
    gpu = torch.cuda.get_device_name()
    result = dict(gpu=gpu, torch=torch.__version__, triton=triton.__version__, python=platform.python_version(),
                  sparsemla=sparsemla.__version__, quick=args.quick, repeats=repeats,
                  timing="CUDA graph replay, event-timed, median; us per call", checked=checked, rows=rows)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"paging_{gpu.replace(' ', '_')}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path}\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
