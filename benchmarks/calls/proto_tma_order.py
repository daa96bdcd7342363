"""Issue 4 experiment (session 20): two changes to page_split's TMA copy, timed alone and in whole calls.

1. ORDER. The shipped kernel deals items round-robin (program p copies items p, p + G, p + 2G, ...), so
   on 834 pages scattered over a 2 GB pool every item a program starts lies in another part of the
   pool, and the copy alone is 0.88-0.90 of copy_ there against 0.95 on consecutive pages (session 19).
   If address translation is what costs (each SM's next item a new 2 MB region, in the source and the
   destination), giving each program a contiguous run of items (ORDER=1: items [p*n/G, (p+1)*n/G), so
   the RATIO parts of one source page go to one program in a row) should close the gap.
2. PDL. The lead's copy starts only after the lead's mark and compact, ~4.6 us into the call (call 11).
   Launched as a programmatic dependent of the compact (griddepcontrol.wait before it reads the list),
   its launch and prologue overlap the compact; PDL needs one stream, so the lead copy stays on the main
   stream and the rest of the ids (mark, final compact, list copy) move to the side stream.

Call 1 (ca321e8) timed 1 and 2: no gain (ORDER=1 68.3 against 63.5-64.0 us alone on consecutive pages, no
faster on scattered ones; PDL within the noise). So address translation is not ruled out on scattered pages,
but a contiguous run per program loses the contiguous window the round-robin order keeps on consecutive ones.
3. PF (call 2). The round-robin order kept, each program warms the address translations of the item PF
   items ahead with prefetch.global.L2 of a few of its source and destination lines. Slower in every row
   (by 1 us with one line per part, 4-5 us with 32): benchmarks/results/session20/README.md.

Times in a CUDA graph of back-to-back calls (as bench_paging), each whole-call variant twice, interleaved.
Run on the GPU after `pip install .`: python3 benchmarks/calls/proto_tma_order.py
"""
import os
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

import sparsemla
from sparsemla.gen.paging import PageSplitSpec, PageSplitTma
from sparsemla.gen.render import load_module
from sparsemla.runtime import paging

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_paging import _median_us, capture, split_pools, touched_tokens  # noqa: E402

_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global

DEV = torch.device("cuda")
P, D = 256, 64
SPEC = PageSplitSpec(P, D, "sm90")
PF_VARIANTS = ((0, 32), (4, 32), (8, 32), (8, 1))  # (items ahead, lines per part prefetched)
CTX = PageSplitTma(SPEC).template_context()


@gluon.jit
def _load_item(src_data, src_scale, pages, w, data, scale, bars, s, ok, RATIO: gl.constexpr, BOXES: gl.constexpr,
               BOX_ROWS: gl.constexpr, SRC_PAGE_ROWS: gl.constexpr, PART_ROWS: gl.constexpr,
               SRC_SCALE_ROW: gl.constexpr, SCALE_ROWS: gl.constexpr, NBYTES: gl.constexpr):
    n = gl.load(pages + w // RATIO, mask=ok, other=0)
    r = w % RATIO
    row = n * SRC_PAGE_ROWS + r * PART_ROWS
    mbarrier.expect(bars.index(s), NBYTES, pred=ok)
    for b in gl.static_range(BOXES):
        _tma_load(src_data, [row + b * BOX_ROWS, 0], bars.index(s), data.index(s * BOXES + b), pred=ok)
    _tma_load(src_scale, [n * SRC_PAGE_ROWS + SRC_SCALE_ROW + r * SCALE_ROWS, 0], bars.index(s), scale.index(s),
              pred=ok)


@gluon.jit
def tma_order_kernel(src_data, dst_data, src_scale, dst_scale, pages, count, num_src_pages, src_bytes, dst_bytes,
                     STAGES: gl.constexpr, ORDER: gl.constexpr, PDL: gl.constexpr, PF: gl.constexpr,
                     PF_LANES: gl.constexpr, RATIO: gl.constexpr, BOXES: gl.constexpr,
                     BOX_ROWS: gl.constexpr, SRC_PAGE_ROWS: gl.constexpr, DST_PAGE_ROWS: gl.constexpr,
                     PART_ROWS: gl.constexpr, SRC_SCALE_ROW: gl.constexpr, SCALE_ROWS: gl.constexpr,
                     NBYTES: gl.constexpr):
    # The shipped page_split_tma_kernel with ORDER (0: round-robin items, 1: a contiguous run of items per
    # program), PDL (wait for the previous kernel in the stream only before reading the list) and PF (> 0:
    # prefetch.global.L2 of PF_LANES lines spread over the source and destination part of the item PF items
    # ahead, so its address translations (and some of its lines) are in place when its TMA copies start).
    pid = gl.program_id(0)
    num_programs = gl.num_programs(0)
    data = gl.allocate_shared_memory(src_data.dtype, [STAGES * BOXES] + src_data.block_type.shape, src_data.layout)
    scale = gl.allocate_shared_memory(src_scale.dtype, [STAGES] + src_scale.block_type.shape, src_scale.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for t in gl.static_range(STAGES):
        mbarrier.init(bars.index(t), count=1)
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait;\n\tmov.u32 $0, 0;", "=r", [], dtype=gl.int32,
                                  is_pure=False, pack=1)
    num_items = gl.minimum(gl.load(count), num_src_pages) * RATIO
    if ORDER == 1:
        first = (pid * num_items) // num_programs
        n_mine = ((pid + 1) * num_items) // num_programs - first
        step = 1
    else:
        first = pid
        n_mine = gl.cdiv(gl.maximum(num_items - pid, 0), num_programs)
        step = num_programs
    for k in gl.static_range(STAGES - 1):
        _load_item(src_data, src_scale, pages, first + k * step, data, scale, bars, k, k < n_mine, RATIO, BOXES,
                   BOX_ROWS, SRC_PAGE_ROWS, PART_ROWS, SRC_SCALE_ROW, SCALE_ROWS, NBYTES)
    lane = gl.arange(0, PF_LANES, layout=gl.BlockedLayout([1], [32], [1], [0]))
    for i in range(n_mine):
        s = i % STAGES
        w = first + i * step
        if PF > 0:
            wp = first + (i + PF) * step
            okp = (i + PF) < n_mine
            npf = gl.load(pages + wp // RATIO, mask=okp, other=0).to(gl.int64)
            rpf = wp % RATIO
            spread = lane.to(gl.int64) * (((PART_ROWS * 64) // PF_LANES) // 128 * 128)
            sp = src_bytes + (npf * SRC_PAGE_ROWS * 64 + rpf * PART_ROWS * 64) + spread
            dp = dst_bytes + (npf * RATIO + rpf) * DST_PAGE_ROWS * 64 + spread
            if okp:
                gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tprefetch.global.L2 [$2];\n\tmov.u32 $0, 0;",
                                          "=r,l,l", [sp, dp], dtype=gl.int32, is_pure=False, pack=1)
        row = (gl.load(pages + w // RATIO) * RATIO + w % RATIO) * DST_PAGE_ROWS
        mbarrier.wait(bars.index(s), (i // STAGES) & 1)
        for b in gl.static_range(BOXES):
            _tma_store(dst_data, [row + b * BOX_ROWS, 0], data.index(s * BOXES + b))
        _tma_store(dst_scale, [row + PART_ROWS, 0], scale.index(s))
        j = i + STAGES - 1
        tma.store_wait(BOXES + 1)
        _load_item(src_data, src_scale, pages, first + j * step, data, scale, bars, j % STAGES, j < n_mine, RATIO,
                   BOXES, BOX_ROWS, SRC_PAGE_ROWS, PART_ROWS, SRC_SCALE_ROW, SCALE_ROWS, NBYTES)
    tma.store_wait(0)
    for t in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(t))


def order_copy(src64, dst64, N, pages, count, order, pdl, stages=3, pf=0, pf_lanes=32):
    """A launcher of tma_order_kernel over pages[0:count] (descriptors as runtime/paging._tma_copy builds them)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from sparsemla.gen.paging import TMA_ROW_BYTES, tma_layout
    width = TMA_ROW_BYTES // 8
    src2, dst2 = src64.view(-1, width), dst64.view(-1, width)
    lay = tma_layout()
    desc = [TensorDescriptor(t, list(t.shape), [width, 1], [rows, width], lay)
            for rows in (CTX["box_rows"], CTX["scale_rows"]) for t in (src2, dst2)]
    grid = (torch.cuda.get_device_properties(DEV).multi_processor_count,)
    kw = dict(STAGES=stages, ORDER=order, PDL=pdl, PF=pf, PF_LANES=pf_lanes, RATIO=CTX["ratio"], BOXES=CTX["boxes"], BOX_ROWS=CTX["box_rows"],
              SRC_PAGE_ROWS=CTX["src_page_rows"], DST_PAGE_ROWS=CTX["dst_page_rows"], PART_ROWS=CTX["part_rows"],
              SRC_SCALE_ROW=CTX["src_scale_row"], SCALE_ROWS=CTX["scale_rows"], NBYTES=CTX["stage_bytes"],
              num_warps=1)
    if pdl:
        kw["launch_pdl"] = True
    sb, db = src64.view(torch.uint8), dst64.view(torch.uint8)
    return lambda: tma_order_kernel[grid](*desc, pages, count, N, sb, db, **kw)


def graph_us(fn, inner=10, repeats=20):
    return _median_us(capture(fn, inner).replay, inner, repeats)


def check(dst, src, tok, n):
    """Every touched source page's parts match the reference split."""
    hot = torch.unique(tok[tok >= 0] // P)
    for i in hot[:: max(1, hot.numel() // 32)].tolist():
        want = paging.page_split_reference(src[i:i + 1], src_page_size=P)
        got = dst[i * (P // D):(i + 1) * (P // D)]
        assert torch.equal(got[:, :D * 584], want[:, :D * 584]), f"page {i}"
    return hot.numel()


def whole_call(mod, src, dst, tok, n, cfg, pf, lanes, order=0, pdl=False):
    """One touched page_split call with the lead share as runtime/paging._touched_with_lead makes it, the lead
    copy being tma_order_kernel(order); pdl: that copy on the main stream as a programmatic dependent of the
    lead's compact, the rest of the ids on the side stream."""
    s64, d64 = src.view(torch.int64), dst.view(torch.int64)
    ratio = P // D
    state = paging._page_list(DEV, n, cfg)
    lead = min(tok.numel(), -(-tok.numel() // (cfg.lead_split * 16)) * 16)
    lead_mark = paging._mark(mod, state, tok[:lead], n, cfg, state.lead_count, bool(cfg.mark_check))
    lead_compact = paging._compact(mod, state, n, cfg, state.lead_pages, state.lead_count, lead=True)
    lead_copy = order_copy(s64, d64, n, state.lead_pages, state.lead_count, order, pdl, pf=pf, pf_lanes=lanes)
    rest_mark = paging._mark(mod, state, tok[lead:], n, cfg, state.count, True)
    final_compact = paging._compact(mod, state, n, cfg, state.pages, state.count, lead=False)
    rest_copy = paging._copy(mod, state, s64, d64, n, ratio, cfg, state.pages, state.count, tma=False)

    def call():
        main = torch.cuda.current_stream()
        lead_mark()
        lead_compact()
        state.side.wait_stream(main)
        if pdl:
            with torch.cuda.stream(state.side):
                rest_mark(), final_compact(), rest_copy()
            lead_copy()
        else:
            with torch.cuda.stream(state.side):
                lead_copy()
            rest_mark(), final_compact(), rest_copy()
        main.wait_stream(state.side)
    return call


def main():
    gen = torch.Generator(device=DEV).manual_seed(0)
    n, src, dst = split_pools(gen, 2.0, P, D)
    mod = load_module(SPEC)
    cfg = SPEC.default_config(touched=True)
    pools = {"834 scattered pages": touched_tokens(n, P, n // 16, (256, 2048), gen).reshape(-1),
             "834 consecutive pages": touched_tokens(n, P, n // 16, (256, 2048), gen, consecutive=True).reshape(-1),
             "131K ids": touched_tokens(n, P, n // 16, (64, 2048), gen).reshape(-1),
             "4 pages": touched_tokens(n, P, 4, (256, 2048), gen).reshape(-1)}
    rows = []
    # 1. The copy alone, on each pool's whole list (as the plain path's compact leaves it).
    s64, d64 = src.view(torch.int64), dst.view(torch.int64)
    for pname in ("834 scattered pages", "834 consecutive pages"):
        tok = pools[pname]
        state = paging._page_list(DEV, n, cfg)
        paging._mark(mod, state, tok, n, cfg, state.count, False)()
        paging._compact(mod, state, n, cfg, state.pages, state.count, lead=False)()
        pages = state.pages.clone()
        count = state.count.clone()
        k = int(count)
        moved = k * (P // D) * D * 584
        copy_us = graph_us(lambda: dst.view(-1)[:moved].copy_(src.view(-1)[:moved]))
        for rep in range(2):
            for pf, lanes in PF_VARIANTS:
                dst.zero_()
                us = graph_us(order_copy(s64, d64, n, pages, count, 0, False, pf=pf, pf_lanes=lanes))
                check(dst, src, tok, n)
                rows.append(("copy alone", pname, f"pf {pf} x{lanes}", us, copy_us / us))
                print(f"  copy alone {pname:22s} pf {pf} x{lanes}: {us:7.2f} us  {copy_us / us:.3f} of copy_ "
                      f"({copy_us:.2f})", flush=True)
    # 2. Whole calls: shipped, and the lead copy with each prefetch variant (round-robin items, no PDL).
    variants = [("shipped", None)] + [(f"pf {pf} x{lanes}", (pf, lanes)) for pf, lanes in PF_VARIANTS]
    for pname, tok in pools.items():
        hot = int(torch.unique(tok[tok >= 0] // P).numel())
        moved = hot * (P // D) * D * 584
        copy_us = graph_us(lambda: dst.view(-1)[:moved].copy_(src.view(-1)[:moved]))
        takes_lead = tok.numel() >= cfg.lead_min_ids
        for rep in range(2):
            for vname, v in variants:
                if v is not None and not takes_lead:
                    continue
                fn = (lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst)) if v is None \
                    else whole_call(mod, src, dst, tok, n, cfg, *v)
                dst.zero_()
                try:
                    us = graph_us(fn)
                    check(dst, src, tok, n)
                    assert int(paging._page_list(DEV, n, cfg).marks.abs().sum()) == 0, "marks left set"
                except Exception as e:
                    print(f"  whole {pname:22s} {vname:16s} FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                rows.append(("whole call", pname, vname, us, copy_us / us))
                print(f"  whole {pname:22s} {vname:16s} {us:7.2f} us  {copy_us / us:.3f} of copy_ ({copy_us:.2f})",
                      flush=True)
    print("\n| what | pool | variant | us | of copy_ |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.3f} |")


if __name__ == "__main__":
    main()
