"""Issue 7 diagnostic (session 36, prepared for the next device time): what bounds the first gathered tile at T=1?

In the narrow bf16 kernel at T=1 H=128 (16-head programs, 16 splits, 128 programs of 2 tiles) the first tile is ready
~4.1-4.3K cycles into a ~10.8K-cycle program whatever was tried (sessions 33-34): its slot ids earlier, tile 1 held
back until tile 0 landed, 4x fewer bytes through L2 (H=16), and (session 36) 64-head programs that gather a quarter
of the bytes. Its group G is one warp group issuing 36 cp.async of 16 bytes a thread a tile. If the time is the
cp.async path's bytes in flight per warp, more gathering warps would land a tile sooner; if it is the SM's or the
memory's, they would not.

This kernel does only the gather: each of PROGRAMS programs copies TILES tiles of 64 rows x 1152 bytes (bf16, d_qk
576) by cp.async into 128-byte-swizzled shared memory, as the narrow kernel's G does, with NW warps, then waits for
them. SHARE programs gather the same rows (8: the 8 head blocks of T=1 H=128; 1: every program its own rows). Each
program stamps clock64 at its start, after its slot ids, after its last cp.async is issued and once everything has
landed. The tiles' first row goes back to global memory, checked against the cache. The kernel time is the median of
CUDA-graph replays over 64 rotating index sets (rows out of L2, as the suite's timing inputs): gen.gpu_measure's
time_calls (in session 37's calls a replay held one pass over the sets).
  python3 benchmarks/calls/gather_probe.py             (on the GPU after `pip install .`)
  python3 benchmarks/calls/gather_probe.py --compile   (no GPU: compiles every variant for sm90)
"""
import argparse
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import async_copy

from sparsemla.gen.gpu_measure import time_calls

_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
_barrier = getattr(gl, "barrier", None) or gl.thread_barrier

ROW = 576  # bf16 columns a row (d_qk 576)
PROGRAMS = 128
# (num_warps, tiles, programs sharing a split's rows, through registers: LDG + STS instead of cp.async)
VARIANTS = [(4, 2, 8, False), (8, 2, 8, False), (16, 2, 8, False), (4, 1, 8, False), (8, 1, 8, False),
            (4, 2, 1, False), (8, 2, 1, False), (4, 2, 8, True), (8, 2, 8, True), (16, 2, 8, True), (4, 1, 8, True),
            (8, 1, 8, True), (8, 2, 1, True)]


@gluon.jit
def _clock64(L: gl.constexpr, N: gl.constexpr):
    zero = gl.zeros([N], gl.int32, layout=L)
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [zero], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _ldg_tile(kv, row, buf, base: gl.constexpr, GC: gl.constexpr):
    """A tile's 9 chunks of 64 columns loaded into registers (all 9 loads issued before any store), then stored into
    buf's chunks base..base + 8: the gather through registers instead of cp.async (LDG.128 + STS.128)."""
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, GC))
    v0 = gl.load(kv + row[:, None] + cols[None, :])
    v1 = gl.load(kv + row[:, None] + (64 + cols)[None, :])
    v2 = gl.load(kv + row[:, None] + (128 + cols)[None, :])
    v3 = gl.load(kv + row[:, None] + (192 + cols)[None, :])
    v4 = gl.load(kv + row[:, None] + (256 + cols)[None, :])
    v5 = gl.load(kv + row[:, None] + (320 + cols)[None, :])
    v6 = gl.load(kv + row[:, None] + (384 + cols)[None, :])
    v7 = gl.load(kv + row[:, None] + (448 + cols)[None, :])
    v8 = gl.load(kv + row[:, None] + (512 + cols)[None, :])
    buf.index(base + 0).store(v0)
    buf.index(base + 1).store(v1)
    buf.index(base + 2).store(v2)
    buf.index(base + 3).store(v3)
    buf.index(base + 4).store(v4)
    buf.index(base + 5).store(v5)
    buf.index(base + 6).store(v6)
    buf.index(base + 7).store(v7)
    buf.index(base + 8).store(v8)


@gluon.jit
def gather_probe(kv, idx, prof, first, TILES: gl.constexpr, SHARE: gl.constexpr, NW: gl.constexpr,
                 LDG: gl.constexpr = False):
    pid = gl.program_id(0)
    split = pid // SHARE
    GC: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [NW, 1], [1, 0])  # 16 bytes a thread, 128 a row a warp
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    TL: gl.constexpr = gl.BlockedLayout([1], [32], [NW], [0])
    buf = gl.allocate_shared_memory(gl.bfloat16, [TILES * 9, 64, 64], SW)  # per tile 9 chunks of 64 columns
    t_start = _clock64(TL, 32 * NW)
    offs = split * TILES * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, GC))
    row0 = gl.load(idx + offs).to(gl.int64) * 576  # (elements: 576 bf16 a row)
    if TILES == 2:
        row1 = gl.load(idx + offs + 64).to(gl.int64) * 576
    t_ids = _clock64(TL, 32 * NW)
    if LDG:  # (issued: tile 0 stored and tile 1's loads issued; with one tile, as landed)
        _ldg_tile(kv, row0, buf, 0, GC)
        t_issued = _clock64(TL, 32 * NW)
        if TILES == 2:
            _ldg_tile(kv, row1, buf, 9, GC)
        _barrier()
        t_landed = _clock64(TL, 32 * NW)
    else:
        for c in gl.static_range(9):
            cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, GC))
            _cp_async(buf.index(c), kv + row0[:, None] + cols[None, :])
        async_copy.commit_group()
        if TILES == 2:
            for c in gl.static_range(9):
                cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, GC))
                _cp_async(buf.index(9 + c), kv + row1[:, None] + cols[None, :])
            async_copy.commit_group()
        t_issued = _clock64(TL, 32 * NW)
        async_copy.wait_group(0)
        _barrier()
        t_landed = _clock64(TL, 32 * NW)
    lane = gl.arange(0, 32 * NW, layout=TL)
    one = lane == 0
    gl.store(prof + pid * 4 + 0 + lane * 0, t_start, mask=one)
    gl.store(prof + pid * 4 + 1 + lane * 0, t_ids, mask=one)
    gl.store(prof + pid * 4 + 2 + lane * 0, t_issued, mask=one)
    gl.store(prof + pid * 4 + 3 + lane * 0, t_landed, mask=one)
    # each tile's row 0, columns 0-63 (chunk 0), back to global memory: the check, and a use of every tile
    OL: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [NW, 1], [1, 0])
    for j in gl.static_range(TILES):
        tile = buf.index(j * 9).load(OL)
        r = gl.arange(0, 64, layout=gl.SliceLayout(1, OL))
        c = gl.arange(0, 64, layout=gl.SliceLayout(0, OL))
        gl.store(first + (pid * TILES + j) * 64 + r[:, None] * 0 + c[None, :], tile, mask=(r == 0)[:, None])


def launch(kv, idx, prof, first, nw, tiles, share, ldg):
    gather_probe[(prof.shape[0],)](kv, idx, prof, first, TILES=tiles, SHARE=share, NW=nw, LDG=ldg, num_warps=nw)


def compile_all() -> int:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    for nw, tiles, share, ldg in VARIANTS:
        sig = {"kv": "*bf16", "idx": "*i32", "prof": "*i64", "first": "*bf16", "TILES": "constexpr",
               "SHARE": "constexpr", "NW": "constexpr", "LDG": "constexpr"}
        src = GluonASTSource(gather_probe, sig, {"TILES": tiles, "SHARE": share, "NW": nw, "LDG": ldg},
                             {(i,): [["tt.divisibility", 16]] for i in range(4)})
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": nw})
        n_async = k.asm["ptx"].count("cp.async.cg.shared.global") + k.asm["ptx"].count("cp.async.ca.shared.global")
        print(f"w{nw} tiles {tiles} share {share} ldg {ldg}: {k.metadata.shared} B shared, {n_async} cp.async in the "
              f"PTX, {k.n_spills if hasattr(k, 'n_spills') else '?'} spills")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true", help="compile every variant for sm90 (no GPU)")
    ap.add_argument("--sets", type=int, default=64)
    ap.add_argument("--programs", type=int, default=PROGRAMS,
                    help="programs in the grid (fewer than the SMs: does each SM's gather get faster?)")
    ap.add_argument("--variants", default="", help="WARPS:TILES:SHARE[:ldg],... (default: VARIANTS)")
    args = ap.parse_args()
    if args.compile:
        return compile_all()
    dev = torch.device("cuda")
    slots = 1 << 20  # 1.2 GB of rows: 64 sets of 2048 rows are 150 MB, out of L2 by the time they come round
    kv = torch.randn(slots, ROW, device=dev).to(torch.bfloat16)
    g = torch.Generator(device=dev).manual_seed(0)
    # (the rows of a split are the 64 x TILES of its list; 16 splits x 128 rows = T=1's 2048 of the list)
    sets = [torch.randint(0, slots, (args.programs * 2 * 64,), device=dev, generator=g, dtype=torch.int32)
            for _ in range(args.sets)]
    lines = ["| path | programs | warps | tiles | programs sharing rows | ids (cycles) | issued | landed (median) | "
             "landed (p90) | kernel us | check |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    variants = VARIANTS if not args.variants else [
        tuple(int(x) for x in v.split(":")[:3]) + (v.endswith(":ldg"),) for v in args.variants.split(",")]
    programs = args.programs
    for nw, tiles, share, ldg in variants:
        prof = torch.zeros(programs, 4, dtype=torch.int64, device=dev)
        first = torch.zeros(programs * tiles, 64, dtype=torch.bfloat16, device=dev)
        launch(kv, sets[0], prof, first, nw, tiles, share, ldg)  # compile
        torch.cuda.synchronize()
        want = torch.stack([kv[sets[0][((p // share) * tiles + j) * 64].long(), :64]
                            for p in range(programs) for j in range(tiles)])
        ok = "ok" if torch.equal(first, want) else "WRONG"
        # the cycles of one launch on rows out of L2 (a set not touched for args.sets - 1 launches)
        for s in sets[1:]:
            launch(kv, s, prof, first, nw, tiles, share, ldg)
        launch(kv, sets[0], prof, first, nw, tiles, share, ldg)
        torch.cuda.synchronize()
        d = (prof - prof[:, :1]).double()
        ids, issued, landed = d[:, 1].median().item(), d[:, 2].median().item(), d[:, 3].median().item()
        p90 = d[:, 3].quantile(0.9).item()
        us = time_calls([lambda s=s: launch(kv, s, prof, first, nw, tiles, share, ldg) for s in sets])[0]
        line = f"| {'LDG+STS' if ldg else 'cp.async'} | {programs} | {nw} | {tiles} | {share} | {ids:.0f} | " \
               f"{issued:.0f} | {landed:.0f} | {p90:.0f} | " \
               f"{us:.2f} | {ok} |"
        print(line, flush=True)
        lines.append(line)
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
