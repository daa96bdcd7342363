"""Issue 4 experiment (session 19): page_split's copy by TMA (Hopper's bulk tensor copies).

The list copy moves every byte through registers and is 0.82-0.85 of copy_ alone; the touched
path, mark + compact + copy, is 0.75-0.77 (target 0.8). A Gluon kernel here copies each listed
page's destination parts with cp.async.bulk.tensor: global -> shared (an mbarrier counts the
bytes) -> global, STAGES parts in flight per program, one warp, no registers on the data path.
The pool is viewed as rows of 64 B (the largest row that divides 576 B, a 256-token page and a
64-token page); a part's 576 data rows move as 576 / BOX boxes of BOX rows, its scale rows as one
box of 8.
Times, in a CUDA graph on the 834 listed pages of a 2 GB pool (scattered or consecutive), against
copy_ of the same bytes: the shipped list copy and TMA variants (box, stages, programs per SM);
then whole touched page_split calls with the TMA copy in place of the list copy.
Session 19 call 2 timed copies alone and whole calls with one TMA copy for both; call 3 the whole
calls with the lead and the rest copied apart.
Run on the GPU after `pip install .`: python3 benchmarks/calls/proto_tma_copy.py
"""
import dataclasses
import os
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

import sparsemla
from sparsemla.gen.layout import model1_page_bytes
from sparsemla.gen.paging import PageSplitSpec
from sparsemla.gen.render import load_module
from sparsemla.runtime import paging

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_paging import _median_us, capture, split_pools, touched_tokens  # noqa: E402

# Triton 3.6 names the TMA copies async_copy_*; later releases async_load / async_store.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global

DEV = torch.device("cuda")
P, D = 256, 64
RATIO = P // D
ROW = 64  # bytes per descriptor row
SRC_ROWS, DST_ROWS = model1_page_bytes(P) // ROW, model1_page_bytes(D) // ROW
PART_ROWS, SCALE_ROWS, SRC_SCALE_ROW = D * 576 // ROW, D * 8 // ROW, P * 576 // ROW


@gluon.jit
def tma_copy_kernel(src_data, dst_data, src_scale, dst_scale, pages, count, num_src_pages,
                    RATIO: gl.constexpr, STAGES: gl.constexpr, BOXES: gl.constexpr, BOX_ROWS: gl.constexpr,
                    SRC_ROWS: gl.constexpr, DST_ROWS: gl.constexpr, PART_ROWS: gl.constexpr,
                    SRC_SCALE_ROW: gl.constexpr, SCALE_ROWS: gl.constexpr, NBYTES: gl.constexpr):
    # Item w (w = pid, pid + G, ...) is part w % RATIO of pages[w // RATIO]; item i of this program
    # goes through stage i % STAGES: its loads were issued STAGES - 1 items earlier.
    pid = gl.program_id(0)
    num_programs = gl.num_programs(0)
    num_items = gl.minimum(gl.load(count), num_src_pages) * RATIO
    n_mine = gl.cdiv(gl.maximum(num_items - pid, 0), num_programs)
    data = gl.allocate_shared_memory(src_data.dtype, [STAGES * BOXES] + src_data.block_type.shape, src_data.layout)
    scale = gl.allocate_shared_memory(src_scale.dtype, [STAGES] + src_scale.block_type.shape, src_scale.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for t in gl.static_range(STAGES):
        mbarrier.init(bars.index(t), count=1)
    for k in gl.static_range(STAGES - 1):
        w = pid + k * num_programs
        ok = k < n_mine
        n = gl.load(pages + w // RATIO, mask=ok, other=0)
        row = n * SRC_ROWS + (w % RATIO) * PART_ROWS
        mbarrier.expect(bars.index(k), NBYTES, pred=ok)
        for b in gl.static_range(BOXES):
            _tma_load(src_data, [row + b * BOX_ROWS, 0], bars.index(k), data.index(k * BOXES + b), pred=ok)
        _tma_load(src_scale, [n * SRC_ROWS + SRC_SCALE_ROW + (w % RATIO) * SCALE_ROWS, 0], bars.index(k),
                  scale.index(k), pred=ok)
    for i in range(n_mine):
        s = i % STAGES
        w = pid + i * num_programs
        drow = (gl.load(pages + w // RATIO) * RATIO + w % RATIO) * DST_ROWS
        mbarrier.wait(bars.index(s), (i // STAGES) & 1)
        for b in gl.static_range(BOXES):
            _tma_store(dst_data, [drow + b * BOX_ROWS, 0], data.index(s * BOXES + b))
        _tma_store(dst_scale, [drow + PART_ROWS, 0], scale.index(s))
        # Item i + STAGES - 1 takes the stage of item i - 1: wait until that item's stores have
        # read it (all but this item's BOXES + 1 store groups).
        j = i + STAGES - 1
        ok = j < n_mine
        sj = j % STAGES
        wj = pid + j * num_programs
        nj = gl.load(pages + wj // RATIO, mask=ok, other=0)
        row = nj * SRC_ROWS + (wj % RATIO) * PART_ROWS
        tma.store_wait(BOXES + 1)
        mbarrier.expect(bars.index(sj), NBYTES, pred=ok)
        for b in gl.static_range(BOXES):
            _tma_load(src_data, [row + b * BOX_ROWS, 0], bars.index(sj), data.index(sj * BOXES + b), pred=ok)
        _tma_load(src_scale, [nj * SRC_ROWS + SRC_SCALE_ROW + (wj % RATIO) * SCALE_ROWS, 0], bars.index(sj),
                  scale.index(sj), pred=ok)
    tma.store_wait(0)
    for t in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(t))


def tma_copy(src, dst, pages, count, n_src, box=64, stages=3, per_sm=1, warps=1):
    """A launcher of the TMA copy of ``pages[0:count]`` from pool ``src`` into ``dst`` (uint8 pools)."""
    lay = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=64, rank=2)
    s2, d2 = src.view(torch.int64).view(-1, ROW // 8), dst.view(torch.int64).view(-1, ROW // 8)
    sd = TensorDescriptor(s2, list(s2.shape), list(s2.stride()), [box, ROW // 8], lay)
    dd = TensorDescriptor(d2, list(d2.shape), list(d2.stride()), [box, ROW // 8], lay)
    ss = TensorDescriptor(s2, list(s2.shape), list(s2.stride()), [SCALE_ROWS, ROW // 8], lay)
    ds = TensorDescriptor(d2, list(d2.shape), list(d2.stride()), [SCALE_ROWS, ROW // 8], lay)
    grid = (per_sm * torch.cuda.get_device_properties(src.device).multi_processor_count,)
    kw = dict(RATIO=RATIO, STAGES=stages, BOXES=PART_ROWS // box, BOX_ROWS=box, SRC_ROWS=SRC_ROWS,
              DST_ROWS=DST_ROWS, PART_ROWS=PART_ROWS, SRC_SCALE_ROW=SRC_SCALE_ROW, SCALE_ROWS=SCALE_ROWS,
              NBYTES=(PART_ROWS + SCALE_ROWS) * ROW, num_warps=warps)
    return lambda: tma_copy_kernel[grid](sd, dd, ss, ds, pages, count, n_src, **kw)


def graph_us(fn, inner=10, repeats=20):
    return _median_us(capture(fn, inner).replay, inner, repeats)


def check(dst, src, pages, n_src):
    """Every listed page's parts match the reference split; the pages not listed stay zero."""
    listed = torch.zeros(n_src, dtype=torch.bool, device=DEV)
    listed[pages.long()] = True
    for n in pages[:: max(1, len(pages) // 24)].tolist():
        want = paging.page_split_reference(src[n:n + 1], src_page_size=P)
        got = dst[n * RATIO:(n + 1) * RATIO]
        assert torch.equal(got[:, :D * 584], want[:, :D * 584]), f"page {n}"
        assert not got[:, D * 584:].any(), f"page {n}: padding written"
    rest = dst.view(n_src, -1)[~listed]
    assert not rest.any(), "a page not listed was written"


def main():
    gen = torch.Generator(device=DEV).manual_seed(0)
    n, src, dst = split_pools(gen, 2.0, P, D)
    s64, d64 = src.view(torch.int64), dst.view(torch.int64)
    mod = load_module(PageSplitSpec(P, D, "sm90"))
    sms = torch.cuda.get_device_properties(DEV).multi_processor_count
    k = 834
    moved = k * RATIO * D * 584
    a, b = src.view(-1)[:moved], dst.view(-1)[:moved]
    copy_us = graph_us(lambda: b.copy_(a))
    print(f"copy_ of {moved / 1e6:.1f} MB: {copy_us:.2f} us", flush=True)
    claims = torch.zeros(n, dtype=torch.int32, device=DEV)
    count = torch.tensor([k], dtype=torch.int32, device=DEV)
    scattered = torch.randperm(n, device=DEV, generator=gen)[:k]
    lists = {"scattered": scattered.sort().values, "consecutive": torch.arange(k, device=DEV) + 5000}
    rows = []
    for lname, pages in lists.items():
        pages = pages.to(torch.int32).contiguous()
        variants = [("list w16 x2 (shipped)", lambda: mod.page_split_list_kernel[(2 * sms,)](
            s64, d64, pages, count, n, claims, CLEAR=False, num_warps=16))]
        for box, stages, per_sm, warps in ((64, 3, 1, 1), (64, 6, 1, 1), (32, 4, 2, 1)):
            variants.append((f"tma box{box} st{stages} x{per_sm} w{warps}",
                             tma_copy(src, dst, pages, count, n, box, stages, per_sm, warps)))
        for vname, fn in variants:
            dst.zero_()
            try:
                us = graph_us(fn)
                check(dst, src, pages, n)
            except Exception as e:  # a variant that does not fit or fails its check is reported, not fatal
                print(f"  {lname:12s} {vname:28s} FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            rows.append((lname, vname, us, copy_us / us))
            print(f"  {lname:12s} {vname:28s} {us:7.2f} us  {copy_us / us:.3f} of copy_", flush=True)

    # Whole touched calls (CUDA graph, as bench_paging times them) with the TMA copy in place of the
    # list copy. With the lead share (the default, lead 1/8 on a side stream), the lead's copy and the
    # rest's copy are chosen apart: the rest's list is usually empty, and a TMA copy's programs (112 KB of
    # shared memory each) cannot start beside the lead's, so its empty grid waits for the lead copy to end.
    ship_copy = paging._copy
    base = PageSplitSpec(P, D, "sm90").default_config(touched=True)
    whole = []
    pools = {"834 scattered pages": touched_tokens(n, P, n // 16, (256, 2048), gen),
             "4 pages": touched_tokens(n, P, 4, (256, 2048), gen),
             "consecutive pages": touched_tokens(n, P, n // 16, (256, 2048), gen, consecutive=True),
             "ids 64x2048": touched_tokens(n, P, n // 16, (64, 2048), gen)}
    variants = [("shipped (list copy)", None, None, {}),
                ("tma st3 lead + tma rest", (64, 3, 1), (64, 3, 1), {}),
                ("tma st3 lead + list rest", (64, 3, 1), None, {}),
                ("tma st4 lead + list rest", (64, 4, 1), None, {}),
                ("tma st6 lead + list rest", (64, 6, 1), None, {}),
                ("tma st3 lead + tma st2 x2 rest", (64, 3, 1), (64, 2, 2), {}),
                ("tma st3 lead 1/16 + list rest", (64, 3, 1), None, dict(lead_split=16)),
                ("tma st3 lead 1/32 + list rest", (64, 3, 1), None, dict(lead_split=32)),
                ("tma st3, no lead", (64, 3, 1), (64, 3, 1), dict(lead_split=0))]
    for name, lead_tma, rest_tma, fields in variants:
        cfg = dataclasses.replace(base, **fields)

        def patched(mod_, state, src64, dst64, N, ratio, cfg_, pages, count, lead_tma=lead_tma, rest_tma=rest_tma):
            use = lead_tma if pages is state.lead_pages else rest_tma
            if use is None:
                return ship_copy(mod_, state, src64, dst64, N, ratio, cfg_, pages, count)
            return tma_copy(src, dst, pages, count, N, *use)
        paging._copy = patched
        for pname, tok in pools.items():
            dst.zero_()
            try:
                us = graph_us(lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst, config=cfg))
                hot = torch.unique(tok[tok >= 0] // P)
                check(dst, src, hot.to(torch.int32), n)
            except Exception as e:
                print(f"  whole call {pname:20s} {name:32s} FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
                continue
            pool_moved = hot.numel() * RATIO * D * 584
            cu = graph_us(lambda: dst.view(-1)[:pool_moved].copy_(src.view(-1)[:pool_moved]))
            whole.append((pname, name, us, cu / us))
            print(f"  whole call {pname:20s} {name:32s} {us:7.2f} us  {cu / us:.3f} of copy_ ({cu:.2f} us)", flush=True)
    paging._copy = ship_copy

    print("\n| pages | copy | us | of copy_ |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.3f} |")
    print("\n| whole touched call | copy | us | of copy_ |\n|---|---|---|---|")
    for r in whole:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.3f} |")


if __name__ == "__main__":
    main()
