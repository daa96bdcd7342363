"""Issue 4 experiment (session 11): what limits page_split's list copy (0.83 of copy_ alone)?

Times copy kernels alone, in a CUDA graph, on the listed pages of the benchmark's pools (834 of
13354 MODEL1 256-token pages, scattered or consecutive), against torch copy_ of the same bytes:
  - the shipped list kernel (fixed grid striding over destination pages), w8 x4 and w16 x2;
  - the same kernel with one program per destination page (grid = the list's length, known here
    on the host: the in-order bound, not usable without a host sync);
  - the all-pages kernel over 834 contiguous pages (the contiguous bound);
  - chunk-strided copies: the data as 4 KB chunks, chunk c to program c % G (or U adjacent chunks
    per program), U chunks in flight per program: the grid works on a contiguous window of the
    list's bytes, as copy_ does;
and the list's order (ascending, shuffled). Then a host-time profile of eager calls.
Run on the GPU after `pip install .`: python3 benchmarks/calls/proto_copy.py (session 11, call 2)
"""
import cProfile
import importlib.util
import io
import os
import pstats
import sys

import torch

import sparsemla
from sparsemla.gen.layout import model1_page_bytes
from sparsemla.gen.paging import PageSplitSpec
from sparsemla.gen.render import load_module
from sparsemla.runtime import paging

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_paging import _median_us, capture  # noqa: E402

DEV = torch.device("cuda")
P, D = 256, 64
RATIO = P // D
SRC_WORDS, DST_WORDS = model1_page_bytes(P) // 8, model1_page_bytes(D) // 8
DATA_WORDS, SCALE_WORDS, SRC_SCALE_WORDS = D * 576 // 8, D * 8 // 8, P * 576 // 8
CHUNK = 512  # words (4 KB); DATA_WORDS = 9 chunks

KERNELS = '''
import triton.language as tl

@triton.jit
def chunk_copy_u{U}_{MODE}(src, dst, pages, count, num_src_pages):
    pid = tl.program_id(0)
    G = tl.num_programs(0)
    num_parts = tl.minimum(tl.load(count), num_src_pages) * {RATIO}
    total = num_parts * {CPP}
    offs = tl.arange(0, {CHUNK})
    c0 = pid * {C0MUL}
    while c0 < total:
{LOADS}
{STORES}
        c0 += G * {U}
    w = pid
    soffs = tl.arange(0, {SCALE})
    while w < num_parts:
        n = tl.load(pages + w // {RATIO}).to(tl.int64)
        r = w % {RATIO}
        sw = tl.load(src + n * {SRC_WORDS} + {SRC_SCALE_WORDS} + r * {SCALE} + soffs)
        tl.store(dst + (n * {RATIO} + r) * {DST_WORDS} + {DATA_WORDS} + soffs, sw)
        w += G
'''


def _chunk_kernels(us=(2, 4, 8)):
    src = "import triton\nimport triton.language as tl\n"
    for mode in ("strided", "adjacent"):
        for u in us:
            loads, stores = [], []
            for k in range(u):
                c = f"c0 + {k} * G" if mode == "strided" else f"c0 + {k}"
                loads += [f"        c{k} = {c}",
                          f"        part{k} = tl.minimum(c{k} // {DATA_WORDS // CHUNK}, num_parts - 1)",
                          f"        n{k} = tl.load(pages + part{k} // {RATIO}).to(tl.int64)",
                          f"        r{k} = part{k} % {RATIO}",
                          f"        k{k} = (c{k} % {DATA_WORDS // CHUNK}) * {CHUNK}",
                          f"        m{k} = c{k} + 0 * offs < total",
                          f"        w{k} = tl.load(src + n{k} * {SRC_WORDS} + r{k} * {DATA_WORDS} + k{k} + offs, mask=m{k})"]
                stores.append(f"        tl.store(dst + (n{k} * {RATIO} + r{k}) * {DST_WORDS} + k{k} + offs, w{k}, mask=m{k})")
            body = KERNELS.split("\n", 3)[3].format(
                U=u, MODE=mode, RATIO=RATIO, CPP=DATA_WORDS // CHUNK, CHUNK=CHUNK, C0MUL=1 if mode == "strided" else u,
                LOADS="\n".join(loads), STORES="\n".join(stores), SCALE=SCALE_WORDS, SRC_WORDS=SRC_WORDS,
                SRC_SCALE_WORDS=SRC_SCALE_WORDS, DST_WORDS=DST_WORDS, DATA_WORDS=DATA_WORDS)
            src += body
    path = os.path.join(os.environ.get("OUT", "/tmp"), "proto_chunk_kernels.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("proto_chunk_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["proto_chunk_kernels"] = mod
    spec.loader.exec_module(mod)
    return mod


def graph_us(fn, inner=10, repeats=20):
    """us per call of ``fn`` from a CUDA graph of ``inner`` calls (bench_paging's capture and median)."""
    return _median_us(capture(fn, inner).replay, inner, repeats)


def check(dst, src, pages):
    """Every listed page's destination parts match the reference split."""
    for n in pages[:: max(1, len(pages) // 16)].tolist():
        want = paging.page_split_reference(src[n:n + 1], src_page_size=P)
        got = dst[n * RATIO:(n + 1) * RATIO]
        assert torch.equal(got[:, :D * 584], want[:, :D * 584]), f"page {n}"


def main():
    gen = torch.Generator(device=DEV).manual_seed(0)
    n = int(2e9) // model1_page_bytes(P)
    src = torch.empty(n, model1_page_bytes(P), dtype=torch.uint8, device=DEV).random_(0, 256, generator=gen)
    dst = torch.zeros(n * RATIO, model1_page_bytes(D), dtype=torch.uint8, device=DEV)
    s64, d64 = src.view(torch.int64), dst.view(torch.int64)
    mod = load_module(PageSplitSpec(P, D, "sm90"))
    chunks = _chunk_kernels()
    sms = torch.cuda.get_device_properties(DEV).multi_processor_count
    k = 834
    moved = k * RATIO * (DATA_WORDS + SCALE_WORDS) * 8
    a, b = src.view(-1)[:moved], dst.view(-1)[:moved]
    copy_us = graph_us(lambda: b.copy_(a))
    print(f"copy_ of {moved / 1e6:.1f} MB: {copy_us:.2f} us")
    claims = torch.zeros(n, dtype=torch.int32, device=DEV)
    count = torch.tensor([k], dtype=torch.int32, device=DEV)
    scattered = torch.randperm(n, device=DEV, generator=gen)[:k]
    lists = {"scattered sorted": scattered.sort().values, "scattered shuffled": scattered,
             "consecutive sorted": torch.arange(k, device=DEV) + 5000,
             "consecutive shuffled": (torch.arange(k, device=DEV) + 5000)[torch.randperm(k, device=DEV, generator=gen)]}
    rows = []
    for lname, pages in lists.items():
        pages = pages.to(torch.int32).contiguous()
        variants = [(f"list w{w} x{s}", lambda w=w, s=s: mod.page_split_list_kernel[(s * sms,)](
                        s64, d64, pages, count, n, claims, CLEAR=False, num_warps=w)) for w, s in ((8, 4), (16, 2), (4, 8))]
        variants.append(("list, one program per part (in order)", lambda: mod.page_split_list_kernel[(k * RATIO,)](
            s64, d64, pages, count, n, claims, CLEAR=False, num_warps=8)))
        for mode in ("strided", "adjacent"):
            for u in (2, 4, 8):
                for w, s in ((4, 8), (8, 4), (4, 16)):
                    kern = getattr(chunks, f"chunk_copy_u{u}_{mode}")
                    variants.append((f"chunk {mode} u{u} w{w} x{s}", lambda kern=kern, w=w, s=s: kern[(s * sms,)](
                        s64, d64, pages, count, n, num_warps=w)))
        for vname, fn in variants:
            dst.zero_()
            us = graph_us(fn)
            check(dst, src, pages)
            rows.append((lname, vname, us, copy_us / us))
            print(f"  {lname:22s} {vname:40s} {us:7.2f} us  {copy_us / us:.3f} of copy_", flush=True)
    us = graph_us(lambda: mod.page_split_kernel[(k * RATIO,)](s64[:k * SRC_WORDS], d64, BLOCK=512, num_warps=4))
    rows.append(("834 contiguous pages", "all-pages kernel", us, copy_us / us))
    print(f"  all-pages kernel on 834 contiguous pages {us:.2f} us {copy_us / us:.3f} of copy_")

    # Host time of eager calls: where does it go?
    tok = src.new_empty(0)
    hot = torch.randperm(n, device=DEV, generator=gen)[:4]
    tok = (hot[torch.randint(0, 4, (256, 2048), device=DEV, generator=gen)] * P).to(torch.int32)
    req = torch.randint(0, 8, (256,), device=DEV, dtype=torch.int32, generator=gen)
    table = torch.randperm(8 * 64, device=DEV, generator=gen).to(torch.int32).view(8, 64)
    local = torch.randint(-1, 64 * 64, (256, 2048), device=DEV, dtype=torch.int32, generator=gen)
    for name, fn in (("convert_indices", lambda: sparsemla.convert_indices(req, table, local, page_size=64)),
                     ("page_split touched 4 pages", lambda: sparsemla.page_split(src, src_page_size=P, touched_indices=tok, out=dst))):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(14)
        print(f"\n== host profile, 200 eager calls of {name}\n" + s.getvalue()[:3500])

    print("\n| list | copy | us | of copy_ |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.3f} |")


if __name__ == "__main__":
    main()
