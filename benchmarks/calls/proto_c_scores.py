"""Issue 7, the fp8 T=256 H=16 rows (session 34 prototype): the narrow fp8 kernel with S^T computed by the
dequantizing warp group, from its registers.

Why (DEVELOPERS.md, session 33's lead): the shipped narrow kernel's group C dequantizes a tile into a 72 KB bf16 stage
and group M reads it twice from shared memory (S^T = K Q^T, then O^T += V^T P^T): ~278 KB of shared-memory and L1
traffic a tile, ~2.2K cycles at 128 B a cycle against ~3.4-3.6K measured. Here C feeds its dequantized registers to
wgmma as the A operand of S^T (session 28's column permutation: each thread loads 16 contiguous bytes, a reshape and
permute is the dot-operand layout; Q^T is stored with its columns permuted the same way), stores only V (512
columns, in their own order) into the stage, and hands M the masked, scaled S^T through 4 KB. M keeps the softmax
and P.V. The K read (72 KB a tile) goes: ~26% less traffic, and M's chain a tile loses S^T's wgmmas.

Scope: fp8_e4m3 (the per-tensor scale folded into the score scale and the output), d_qk 576, 16 heads, one split,
no sink, no LSE, no topk_length; tilings as the shipped kernel's (STAGES stages of V, LOADERS C groups taking
alternate tiles): st1 w8 (two programs an SM: the shipped T=256 entry) and st2 w12.

  python3 benchmarks/calls/proto_c_scores.py [--diag]  (GPU: correctness, then timing beside the shipped kernel;
                                                        --diag: also without C's or M's wgmmas, wrong outputs)
  python3 benchmarks/calls/proto_c_scores.py --compile (CPU: compile for sm_90a, print registers / spills / smem)
"""
import argparse
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

from proto_regs_a import XR_L, _perm_k, _prefetch_l2  # (the script's folder: session 28's prototype)

_barrier = getattr(gl, "barrier", None) or gl.thread_barrier

BLOCK_N = gl.constexpr(64)
D_NOPE = gl.constexpr(512)
D_ROPE = gl.constexpr(64)
TOPK = gl.constexpr(2048)
# mbarriers: ready[s] (C wrote V into stage s and S^T into its score buffer), free[s] (M is done with both).
READY = gl.constexpr(0)
FREE = gl.constexpr(2)
# C loads 64 columns in proto_regs_a's XR_L: the dot operand's layout, a thread's register bits of K the low bits of
# the address, so each thread's 16 bytes of a row are contiguous; a reshape/permute (_a_operand) is then the A operand
# of S^T with its K index in _perm_k's order.


@gluon.jit
def _dequant(x):
    """e4m3 bytes -> bf16 (through float32: HADD2 + F2FP, as the shipped kernel converts)."""
    return x.to(gl.float8e4nv, bitcast=True).to(gl.float32).to(gl.bfloat16)


@gluon.jit
def _a_operand(y, W: gl.constexpr, A_L: gl.constexpr):
    """bf16 y [64, W] in load order -> the A operand of S^T (K in perm_k order), without moving data."""
    y = gl.reshape(y, [BLOCK_N, W // 64, 4, 8, 2])  # (key, b, c, i3..i1, i0)
    y = gl.permute(y, (0, 1, 3, 2, 4))  # (key, b, i3..i1, c, i0): K = 64 b + 8 i + 2 c + i0
    return gl.convert_layout(gl.reshape(y, [BLOCK_N, W]), A_L, assert_trivial=True)


@gluon.jit
def _load_q_t(q, stride_qt, stride_qh, t, qn, qr, BLOCK_H: gl.constexpr):
    """Q into shared memory with its columns in perm_k order (by the 4 warps before the partitions start)."""
    GQ: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    heads = gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GQ))
    q_row = q + t * stride_qt + heads.to(gl.int64)[:, None] * stride_qh
    k = gl.arange(0, D_NOPE, layout=gl.SliceLayout(0, GQ))
    qn.store(gl.load(q_row + _perm_k(k)[None, :]))
    kr = gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GQ))
    qr.store(gl.load(q_row + D_NOPE + _perm_k(kr)[None, :]))
    fence_async_shared()
    _barrier()


@gluon.jit
def _chunk(x, COL: gl.constexpr, kst, qb, s, A_L: gl.constexpr, V: gl.constexpr, ACC: gl.constexpr,
           DIAG: gl.constexpr):
    """64 columns of a tile: e4m3 bytes x [64, 64] dequantized, stored as V's columns COL.. (V), and S^T's wgmma
    over them issued (ACC: onto s) with at most one other in flight (not with DIAG 1)."""
    y = _dequant(x)
    if V:
        kst.slice(COL, 64, dim=1).store(y)
    if DIAG != 1:
        s = warpgroup_mma(_a_operand(y, 64, A_L), qb.slice(COL, 64, dim=1).permute((1, 0)), s, use_acc=ACC,
                          is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
    return s


@gluon.jit
def _group_c(kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale,
             FIRST: gl.constexpr, STEP: gl.constexpr, STAGES: gl.constexpr, BLOCK_H: gl.constexpr, DIAG: gl.constexpr):
    """Tiles FIRST, FIRST + STEP, ...: the e4m3 bytes into registers (before waiting for the stage), then per 64
    columns: dequantized, V's into the stage, and the A operand of S^T's wgmmas; S^T masked and scaled into the
    stage's score buffer."""
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_H, 16])
    A_L: gl.constexpr = gl.DotOperandLayout(0, S_L, 2)
    KEYS: gl.constexpr = gl.SliceLayout(1, S_L)
    LP: gl.constexpr = gl.BlockedLayout([1, 2], [8, 4], [4, 1], [1, 0])  # L2 prefetch: 128-B lines
    keys = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, XR_L))
    cols_r = gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, XR_L))
    lines = gl.minimum(gl.arange(0, 8, layout=gl.SliceLayout(0, LP)) * 128, 575)
    slot_nx = gl.load(idx_row + FIRST * BLOCK_N + keys, mask=FIRST * BLOCK_N + keys < TOPK, other=-1)
    slot_nx2 = gl.load(idx_row + (FIRST + STEP) * BLOCK_N + keys, mask=(FIRST + STEP) * BLOCK_N + keys < TOPK,
                       other=-1)
    for j in range(FIRST, n_tiles, STEP):
        stage = j % STAGES
        slot = slot_nx
        slot_nx = slot_nx2
        nx2 = (j + 2 * STEP) * BLOCK_N + keys
        slot_nx2 = gl.load(idx_row + nx2, mask=nx2 < TOPK, other=-1)
        ok_nx = (slot_nx >= 0) & (slot_nx < num_slots)
        row_nx = gl.convert_layout(gl.where(ok_nx, slot_nx, 0).to(gl.int64) * stride_row, gl.SliceLayout(1, LP))
        _prefetch_l2(kv + row_nx[:, None] + lines[None, :])
        ok = (slot >= 0) & (slot < num_slots)
        row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
        row_r = gl.convert_layout(row, gl.SliceLayout(1, XR_L))
        ok_r = gl.convert_layout(ok, gl.SliceLayout(1, XR_L))
        pk = kv + row_r[:, None] + cols_r[None, :]
        x0 = gl.load(pk, mask=ok_r[:, None], other=0)
        x1 = gl.load(pk + 64, mask=ok_r[:, None], other=0)
        x2 = gl.load(pk + 128, mask=ok_r[:, None], other=0)
        x3 = gl.load(pk + 192, mask=ok_r[:, None], other=0)
        x4 = gl.load(pk + 256, mask=ok_r[:, None], other=0)
        x5 = gl.load(pk + 320, mask=ok_r[:, None], other=0)
        x6 = gl.load(pk + 384, mask=ok_r[:, None], other=0)
        x7 = gl.load(pk + 448, mask=ok_r[:, None], other=0)
        xr = gl.load(pk + 512, mask=ok_r[:, None], other=0)
        mbarrier.wait(bars.index(FREE + stage), ((j // STAGES) & 1) ^ 1, pred=j >= STAGES)
        kst = kn.index(stage)
        # S^T in nine wgmmas of 64 columns, at most two in flight (their A operands are live registers).
        s = gl.zeros([BLOCK_N, BLOCK_H], gl.float32, layout=S_L)
        s = _chunk(x0, 0, kst, qn, s, A_L, True, False, DIAG)
        s = _chunk(x1, 64, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(x2, 128, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(x3, 192, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(x4, 256, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(x5, 320, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(x6, 384, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(x7, 448, kst, qn, s, A_L, True, True, DIAG)
        s = _chunk(xr, 0, kst, qr, s, A_L, False, True, DIAG)
        if DIAG != 1:
            s = warpgroup_mma_wait(0, deps=[s])
        ok_s = gl.convert_layout(ok, KEYS)
        sbuf.index(stage).store(gl.where(ok_s[:, None], s * score_scale, float("-inf")))
        fence_async_shared()  # V's stores, before M's wgmma (the async proxy) reads them
        _barrier()
        mbarrier.arrive(bars.index(READY + stage))


@gluon.jit
def _group_c0(kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale,
              STAGES: gl.constexpr, LOADERS: gl.constexpr, BLOCK_H: gl.constexpr, DIAG: gl.constexpr):
    _group_c(kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale, 0, LOADERS,
             STAGES, BLOCK_H, DIAG)


@gluon.jit
def _group_c1(kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale,
              STAGES: gl.constexpr, LOADERS: gl.constexpr, BLOCK_H: gl.constexpr, DIAG: gl.constexpr):
    _group_c(kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale, 1, LOADERS,
             STAGES, BLOCK_H, DIAG)


@gluon.jit
def _group_m(kn, pt, sbuf, bars, n_tiles, out, stride_ot, stride_oh, t, out_scale,
             STAGES: gl.constexpr, LOADERS: gl.constexpr, BLOCK_H: gl.constexpr, DIAG: gl.constexpr):
    """The softmax of C's S^T and O^T += V^T P^T (not with DIAG 2), every tile; then the output."""
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_H, 16])
    HEADS: gl.constexpr = gl.SliceLayout(0, S_L)
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=HEADS)
    l_k = gl.zeros([BLOCK_N, BLOCK_H], gl.float32, layout=S_L)
    acc = gl.zeros([D_NOPE, BLOCK_H], gl.float32, layout=S_L)
    for j in range(n_tiles):
        stage = j % STAGES
        mbarrier.wait(bars.index(READY + stage), (j // STAGES) & 1)
        s = sbuf.index(stage).load(S_L)
        m_new = gl.maximum(m_i, gl.max(s, axis=0))
        m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = gl.exp2(m_i - m_use)
        p = gl.exp2(s - m_use[None, :])
        l_k = l_k * alpha[None, :] + p
        m_i = m_new
        pt.index(stage).store(p.to(gl.bfloat16))
        fence_async_shared()
        _barrier()  # all four warps' P^T, before the warp group's wgmma reads it
        acc = acc * alpha[None, :]
        if DIAG != 2:
            acc = warpgroup_mma(kn.index(stage).permute((1, 0)), pt.index(stage), acc, is_async=True)
            acc = warpgroup_mma_wait(0, deps=[acc])
        _barrier()
        mbarrier.arrive(bars.index(FREE + stage))
    l_o = gl.sum(l_k, axis=0)
    inv = gl.where(l_o > 0.0, out_scale / gl.where(l_o > 0.0, l_o, 1.0), 0.0)
    heads = gl.arange(0, BLOCK_H, layout=HEADS)
    dims = gl.arange(0, D_NOPE, layout=gl.SliceLayout(1, S_L))
    o_row = out + t * stride_ot + heads.to(gl.int64)[None, :] * stride_oh
    gl.store(o_row + dims[:, None], (acc * inv[None, :]).to(gl.bfloat16))


@gluon.jit
def proto_cs(q, stride_qt, stride_qh, kv, stride_row, num_slots, idx, stride_it, out, stride_ot, stride_oh,
             score_scale, out_scale, BLOCK_H: gl.constexpr, STAGES: gl.constexpr, LOADERS: gl.constexpr,
             C_REGS: gl.constexpr, DIAG: gl.constexpr = 0):
    t = gl.program_id(0).to(gl.int64)
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    qn = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_NOPE], SW)
    qr = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_ROPE], SW)
    kn = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, D_NOPE], SW)
    pt = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, BLOCK_H],
                                   gl.NVMMASharedLayout.get_default_for([BLOCK_N, BLOCK_H], gl.bfloat16))
    sbuf = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_N, BLOCK_H], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    bars = gl.allocate_shared_memory(gl.int64, [4, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(READY + i), count=1)
        mbarrier.init(bars.index(FREE + i), count=1)
    _load_q_t(q, stride_qt, stride_qh, t, qn, qr, BLOCK_H)
    n_tiles = TOPK // BLOCK_N
    idx_row = idx + t * stride_it
    if LOADERS == 2:
        gl.warp_specialize([
            (_group_m, (kn, pt, sbuf, bars, n_tiles, out, stride_ot, stride_oh, t, out_scale, STAGES, LOADERS,
                        BLOCK_H, DIAG)),
            (_group_c0, (kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale, STAGES,
                         LOADERS, BLOCK_H, DIAG)),
            (_group_c1, (kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale, STAGES,
                         LOADERS, BLOCK_H, DIAG)),
        ], [4, 4], [C_REGS, C_REGS])
    else:
        gl.warp_specialize([
            (_group_m, (kn, pt, sbuf, bars, n_tiles, out, stride_ot, stride_oh, t, out_scale, STAGES, LOADERS,
                        BLOCK_H, DIAG)),
            (_group_c0, (kv, stride_row, num_slots, idx_row, n_tiles, qn, qr, kn, sbuf, bars, score_scale, STAGES,
                         LOADERS, BLOCK_H, DIAG)),
        ], [4], [C_REGS])


# (stages, loaders, C registers, maxnreg): the shipped kernel's two tilings at T=256 and T=128.
TILINGS = {"st1 w8": (1, 1, 120, 128), "st2 w12": (2, 2, 152, 0)}


def launch(q, cache_u8, idx, out, sm_scale, kv_scale, tiling, diag=0):
    """The prototype with a tiling of TILINGS; diag 1 (C issues no wgmma: S^T is 0) or 2 (M issues no P.V)
    computes wrong outputs, for timing only: what each group's wgmmas add."""
    stages, loaders, c_regs, maxnreg = TILINGS[tiling]
    T, H, _ = q.shape
    opts = dict(num_warps=4, **({"maxnreg": maxnreg} if maxnreg else {}))
    proto_cs[(T,)](q, q.stride(0), q.stride(1), cache_u8, cache_u8.stride(0), cache_u8.shape[0], idx, idx.stride(0),
                   out, out.stride(0), out.stride(1), sm_scale * kv_scale * 1.4426950408889634, kv_scale,
                   BLOCK_H=H, STAGES=stages, LOADERS=loaders, C_REGS=c_regs, DIAG=diag, **opts)


def compile_only(tiling: str) -> int:
    """Compile one tiling for sm_90a and print its resources."""
    import re
    from triton.backends.compiler import GPUTarget
    from sparsemla.gen.compile_check import _ptxas_resources
    stages, loaders, c_regs, maxnreg = TILINGS[tiling]
    sig = {"q": "*bf16", "stride_qt": "i32", "stride_qh": "i32", "kv": "*u8", "stride_row": "i32",
           "num_slots": "i32", "idx": "*i32", "stride_it": "i32", "out": "*bf16", "stride_ot": "i32",
           "stride_oh": "i32", "score_scale": "fp32", "out_scale": "fp32", "BLOCK_H": "constexpr",
           "STAGES": "constexpr", "LOADERS": "constexpr", "C_REGS": "constexpr"}
    consts = {"BLOCK_H": 16, "STAGES": stages, "LOADERS": loaders, "C_REGS": c_regs}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)}
    opts = dict(num_warps=4, **({"maxnreg": maxnreg} if maxnreg else {}))
    k = triton.compile(gluon._runtime.GluonASTSource(proto_cs, sig, consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options=opts)
    ptx = k.asm["ptx"]
    print(f"{tiling}: smem {k.metadata.shared} B; wgmma", len(re.findall(r"wgmma.mma_async", ptx)),
          "; regs / spill:", _ptxas_resources(ptx, "sm90"), flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--tilings", default=",".join(TILINGS))
    ap.add_argument("--diag", action="store_true", help="also time each tiling without C's and without M's wgmmas")
    args = ap.parse_args()
    tilings = args.tilings.split(",")
    if args.compile:
        return max(compile_only(t) for t in tilings)
    import sparsemla
    from sparsemla.bench import FORMATS, copy_ceiling_gbs, graph_time_us, make_cache
    from sparsemla.gen.suite import SLOTS
    dev = torch.device("cuda")
    T, H, topk = args.tokens, 16, 2048
    cache, kw = make_cache(FORMATS["fp8"], dev)
    u8 = cache.view(torch.uint8)
    sm_scale = 576 ** -0.5
    ok_all = True
    for trial in range(3):
        g = torch.Generator(device=dev).manual_seed(trial)
        idx = torch.randint(0, SLOTS, (T, topk), device=dev, generator=g, dtype=torch.int32)
        if trial == 1:
            idx[idx % 7 == 0] = -1
            idx[3] = -1  # an all-invalid row
        if trial == 2:
            idx[5, 100:] = -1  # a row with one partial tile and empty ones after it
        q = torch.randn(T, H, 576, device=dev, generator=g).bfloat16()
        ref = sparsemla.sparse_mla(q, cache, idx, sm_scale=sm_scale, kv_format="fp8_e4m3", backend="torch", **kw)
        shipped = sparsemla.sparse_mla(q, cache, idx, sm_scale=sm_scale, kv_format="fp8_e4m3", **kw)
        for name, out in [("shipped", shipped)] + [(tl, None) for tl in tilings]:
            if out is None:
                out = torch.full((T, H, 512), float("nan"), device=dev, dtype=torch.bfloat16)
                launch(q, u8, idx, out, sm_scale, kw["kv_scale"], name)
            err = ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()
            finite = bool(torch.isfinite(out.float()).all())
            zero_row = float(out[3].float().abs().max()) if trial == 1 else 0.0
            good = finite and err < 8e-3 and zero_row == 0.0
            ok_all &= good
            print(f"trial {trial} {name}: rel err {err:.2e} finite {finite} all-invalid row max "
                  f"{zero_row} -> {'ok' if good else 'FAIL'}", flush=True)
    # Timing: rotating index sets so the rows exceed L2, CUDA-graph replay, in rotated orders.
    sets = []
    for r in range(4):
        g = torch.Generator(device=dev).manual_seed(100 + r)
        idx = torch.randint(0, SLOTS, (T, topk), device=dev, generator=g, dtype=torch.int32)
        q = torch.randn(T, H, 576, device=dev, generator=g).bfloat16()
        sets.append((q, idx, torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)))
    variants = {f"proto {tl}": [lambda s=s, tl=tl: launch(s[0], u8, s[1], s[2], sm_scale, kw["kv_scale"], tl)
                                for s in sets] for tl in tilings}
    for tl in tilings if args.diag else ():
        for diag, what in ((1, "no S^T wgmma"), (2, "no P.V wgmma")):
            variants[f"proto {tl} {what}"] = [
                lambda s=s, tl=tl, diag=diag: launch(s[0], u8, s[1], s[2], sm_scale, kw["kv_scale"], tl, diag)
                for s in sets]
    variants["shipped"] = [lambda s=s: sparsemla.sparse_mla(s[0], cache, s[1], sm_scale=sm_scale,
                                                            kv_format="fp8_e4m3", out=s[2], **kw) for s in sets]
    names = list(variants)
    times = {n: [] for n in names}
    for rep in range(2 * len(names)):
        for n in names[rep % len(names):] + names[:rep % len(names)]:
            times[n].append(graph_time_us(variants[n]))
    nbytes = T * topk * 576
    copy_gbs = copy_ceiling_gbs(dev)
    print(f"| variant | us (median of {2 * len(names)}) | GB/s | of copy ceiling ({copy_gbs:.0f} GB/s) |\n"
          "|---|---|---|---|")
    for n in names:
        us = sorted(times[n])[len(times[n]) // 2]
        print(f"| {n} fp8 T={T} H={H} | {us:.1f} | {nbytes / us / 1e3:.0f} | {nbytes / us / 1e3 / copy_gbs:.2f} |"
              f" (runs {[round(x, 1) for x in times[n]]})")
    print("correctness:", "ok" if ok_all else "FAIL")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
