"""Issue 7, the fp8 T=256 H=16 rows (session 41 prototype): the raw e4m3 rows gathered by cp.async, both products
on e4m3 operands, V^T transposed in place.

Why: session 41's diagnostics of proto_fp8_mma.py (calls 5-7, an H100; benchmarks/results/session41/README.md). On a
slot pool that stays in L2 (what the SMs need; the H200 has the same SMs) the shipped fp8_e4m3 kernel takes 115-118
us at T=256 H=16, above the H200 target (0.7 of the copy ceiling: 103.4 us). A group gathering the raw rows by
cp.async straight into two 36 KB stages, S^T on e4m3 operands from the stage and P.V reading the stage as if it were
V^T (wrong results, timing only) took 77.8 us on L2 and 107.5 on the suite's pool (0.93 of the H100's copy ceiling).
What was missing is V^T: fp8 wgmma reads only K-major operands. Here it is made in place:
- Group G (4 warps) gathers tile j + 1 by cp.async into its stage (K's 512 bytes a row as 4 column blocks of 128
  bytes, each block 8 KB: 64 rows of one 128-byte swizzle row; the rope's 64 bytes in a buffer of their own), then
  transposes tile j's stage in place: column block c of K and rows 128c-128c+127 of V^T ([512, 64] with a 64-byte
  swizzle) are the same 8 KB. With EARLY it loads the whole tile as 32-bit words (a thread's 4 keys of 4 words) while
  M's S^T reads K, transposes each 4 x 4 block of bytes by byte permutes in registers, and stores V^T's words once
  M's S^T is done with K.
- Group M: S^T from the stage against Q's two e4m3 halves, the softmax (the keys' mask from the slot ids, loaded a
  tile ahead: cp.async zero-fills missing rows), P x 256's two e4m3 halves, then O^T += V^T P^T from the stage.
Shared memory a program: two stages of 36 KB, Q's halves 18 KB, P's 2 KB: 94.5 KB, two programs an SM.
SEP (after call 18; not yet run): one raw stage and V^T in a buffer of its own (90 KB), made by G as soon as a tile's
rows land and stored once P.V of the tile before is done: V^T off the path between S^T and P.V, the next tile's gather
issued once S^T is done with the stage.

Outcome (session 41, calls 8-18, an H100; benchmarks/results/session41/README.md): correct (rel err 1.8-2.7e-3, as
proto_fp8_mma.py; tile 0's V^T and scores as M sees them checked byte for byte). With transpose layout 1 and EARLY,
116.9 us on an L2-resident slot pool and 124.5 on the suite's, against the shipped kernel's 115.4 / 143.1: as fast as
it where the SMs bound, 1.15x where the H100's memory does. Without the transpose (wrong results) 78.9 / 107.8, so
the transpose still costs ~38 us: its stores (2-way bank conflicts by the arithmetic) sit between S^T and P.V.
Transpose layout 0 (call 16: loads 8-way conflicts) took 173.7 / 178.9. On the way: the layout conversion's transpose
(by stmatrix) gave NaN, and M's P.V on a view of the whole two-stage buffer, reinterpreted then indexed by the stage,
read shared memory out of range under compute-sanitizer (call 15); each stage's own reinterpreted view is right.

Scope: fp8_e4m3, d_qk 576 or 512 (ROPE, --format fp8 or fp8_nope), 16 heads, one split, no sink, LSE or
topk_length.
  python3 benchmarks/calls/proto_fp8_raw.py            (GPU: unit check, correctness, timing beside the shipped kernel)
  python3 benchmarks/calls/proto_fp8_raw.py --compile  (no GPU: compile for sm_90a, print registers / spills / smem)
"""
import argparse
import os
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    async_copy, fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_fp8_mma import (  # noqa: E402  (the same Q halves, scores, softmax, output, slot ids and L2 prefetch)
    BLOCK_H, BLOCK_N, D_NOPE, D_ROPE, _load_q_halves, _prefetch_l2, _reinterpret, _slots, _softmax_p, _summed_scores,
    _write_out, check_out)

_barrier = getattr(gl, "barrier", None) or gl.thread_barrier
_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared

STAGES = gl.constexpr(2)
# barriers of stage s at 4 s + ...
READY = gl.constexpr(0)  # the stage's rows landed (one cp.async arrive from each of G's 128 threads)
ST_DONE = gl.constexpr(1)  # M's S^T read the stage's K
VT_READY = gl.constexpr(2)  # G stored V^T over K
FREE = gl.constexpr(3)  # M's P.V read V^T
GATHER_REGS = gl.constexpr(96)
SW128 = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2))
SW64 = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8, rank=2))
# The stages as 32-bit words (4 columns of a key row; 4 keys of a V^T row): the same bytes, the same swizzles
SW128_32 = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2))
SW64_32 = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=32, rank=2))
# A 128-column block's words [64 keys, 32 words] as the transpose loads them (TR_LAYOUTS[TRL]); by the arithmetic of
# the swizzles (a 4-byte store's lanes write V^T rows of one parity, so 2-way at best):
# 0: a thread's 4 keys of one word, a warp 16 groups of 4 keys x 2 words: loads 8-way, stores 2-way (call 16)
# 1: a thread's 4 keys of 4 words (16-byte loads), a warp 16 groups x 2 units: loads and stores 2-way
TR_LAYOUTS = {0: gl.BlockedLayout([4, 1], [16, 2], [1, 4], [1, 0]),
              1: gl.BlockedLayout([4, 4], [16, 2], [1, 4], [1, 0])}


# prmt selectors (byte i of the result is byte SEL[i] of y:x, x's bytes 0-3, y's 4-7)
LO_PAIRS = gl.constexpr("0x5140")  # x0 y0 x1 y1
HI_PAIRS = gl.constexpr("0x7362")  # x2 y2 x3 y3
LO_HALVES = gl.constexpr("0x5410")  # x0 x1 y0 y1
HI_HALVES = gl.constexpr("0x7632")  # x2 x3 y2 y3


@gluon.jit
def _prmt(x, y, SEL: gl.constexpr):
    return gl.inline_asm_elementwise("prmt.b32 $0, $1, $2, " + SEL + ";", "=r,r,r", [x, y], dtype=gl.int32,
                                     is_pure=True, pack=1)


@gluon.jit
def _transposed_block(k32, c: gl.constexpr, TR_L: gl.constexpr):
    """128-column block c of the stage's K (k32: [64 keys, 128 words], 128-byte swizzle) as V^T's words [128, 16] in
    registers. Each thread takes 4 keys of a word and transposes the 4 x 4 bytes by byte permutes: word i out is
    column 4 w + i of those keys. (No layout conversion: it moves twice the shared-memory bytes, through scratch.)"""
    x = k32.slice(c * 32, 32, dim=1).load(TR_L)  # [64, 32]
    x = gl.permute(gl.reshape(x, [16, 4, 32]), (0, 2, 1))  # [key group, word, key in group]
    k02, k13 = gl.split(gl.reshape(x, [16, 32, 2, 2]))  # (the last axis: key 2 p + q)
    k0, k2 = gl.split(k02)
    k1, k3 = gl.split(k13)
    t0 = _prmt(k0, k1, LO_PAIRS)  # k0.0 k1.0 k0.1 k1.1
    t1 = _prmt(k2, k3, LO_PAIRS)
    t2 = _prmt(k0, k1, HI_PAIRS)  # k0.2 k1.2 k0.3 k1.3
    t3 = _prmt(k2, k3, HI_PAIRS)
    # [16, 32, 2, 2]: word 2 p + q of the 4 out, column 4 w + 2 p + q (k0 k1 k2 k3 of one byte each)
    o = gl.join(gl.join(_prmt(t0, t1, LO_HALVES), _prmt(t2, t3, LO_HALVES)),
                gl.join(_prmt(t0, t1, HI_HALVES), _prmt(t2, t3, HI_HALVES)))
    return gl.reshape(gl.permute(gl.reshape(o, [16, 32, 4]), (1, 2, 0)), [128, 16])  # [column, key group]


@gluon.jit
def _transpose_in_place(k32, vt32, TR_L: gl.constexpr):
    """The stage's 512 K columns rewritten as V^T (vt32: [512, 16 words], 64-byte swizzle; the same bytes), one
    128-column block (the same 8 KB in both) at a time."""
    for c in gl.static_range(D_NOPE // 128):
        o = _transposed_block(k32, c, TR_L)
        _barrier()  # every warp holds block c before any overwrites it
        vt32.slice(c * 128, 128, dim=0).store(o)


@gluon.jit
def _gather(kv, stride_row, num_slots, idx_row, n_tiles, g, stage, stage_r, ready, free, free_phase, free_pred,
            ROPE: gl.constexpr, tlen=0, TLEN: gl.constexpr = False):
    """cp.async of tile g's raw rows into stage (K's 512 bytes) and stage_r (the rope's 64) once free completes its
    phase free_phase (if free_pred), each thread's copies arriving on ready; tile g + 1's rows into L2 first. Rows
    of invalid slots (and with TLEN of keys tlen and on) are zero-filled."""
    GC: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])  # a warp 4 rows x 128 bytes
    GR: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])  # the rope's 64 bytes: a warp 8 rows
    LP: gl.constexpr = gl.BlockedLayout([1, 2], [8, 4], [4, 1], [1, 0])  # L2 prefetch: a thread per 128-byte line
    row_bytes: gl.constexpr = D_NOPE + D_ROPE if ROPE else D_NOPE
    lines = gl.minimum(gl.arange(0, 8, layout=gl.SliceLayout(0, LP)) * 128, row_bytes - 1)  # (the last byte last)
    slot_nx = _slots(idx_row, g + 1, n_tiles, gl.SliceLayout(1, LP))
    ok_nx = (slot_nx >= 0) & (slot_nx < num_slots)
    _prefetch_l2(kv + (gl.where(ok_nx, slot_nx, 0).to(gl.int64) * stride_row)[:, None] + lines[None, :])
    slot = _slots(idx_row, g, n_tiles, gl.SliceLayout(1, GC))
    ok = (slot >= 0) & (slot < num_slots)
    if TLEN:
        ok = ok & (g * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, GC)) < tlen)
    row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
    mbarrier.wait(free, free_phase, pred=free_pred)
    for c in gl.static_range(D_NOPE // 128):
        cols = c * 128 + gl.arange(0, 128, layout=gl.SliceLayout(0, GC))
        _cp_async(stage.slice(c * 128, 128, dim=1), kv + row[:, None] + cols[None, :], mask=ok[:, None])
    if ROPE:
        slot_r = _slots(idx_row, g, n_tiles, gl.SliceLayout(1, GR))  # (loaded again: no layout conversion)
        ok_r = (slot_r >= 0) & (slot_r < num_slots)
        if TLEN:
            ok_r = ok_r & (g * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, GR)) < tlen)
        row_r = gl.where(ok_r, slot_r, 0).to(gl.int64) * stride_row
        cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))
        _cp_async(stage_r, kv + row_r[:, None] + cols_r[None, :], mask=ok_r[:, None])
    async_copy.mbarrier_arrive(ready, increment_count=False)


@gluon.jit
def _group_g(kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, k32, vt32, bars, DIAG: gl.constexpr,
             TR_L: gl.constexpr, EARLY: gl.constexpr, ROPE: gl.constexpr):
    """Two stages: gathers tile j + 1 into its stage by cp.async, then turns tile j's K into V^T in place once M's
    S^T is done with it."""
    for j in range(-1, n_tiles):
        g = j + 1  # the tile gathered now
        if g < n_tiles:
            gs = g % STAGES
            _gather(kv, stride_row, num_slots, idx_row, n_tiles, g, kn8.index(gs), kr8.index(gs),
                    bars.index(4 * gs + READY), bars.index(4 * gs + FREE), ((g // STAGES) & 1) ^ 1, g >= STAGES,
                    ROPE)
        if j >= 0:
            st = j % STAGES
            ph = (j // STAGES) & 1
            mbarrier.wait(bars.index(4 * st + READY), ph)  # (the rows, for this group's loads)
            if EARLY and DIAG & 1 == 0:
                # the whole tile's V^T in registers while M's S^T reads K, then stored once S^T is done with it
                k32s = k32.index(st)
                o0 = _transposed_block(k32s, 0, TR_L)
                o1 = _transposed_block(k32s, 1, TR_L)
                o2 = _transposed_block(k32s, 2, TR_L)
                o3 = _transposed_block(k32s, 3, TR_L)
                _barrier()  # every warp holds the tile before any overwrites it
                mbarrier.wait(bars.index(4 * st + ST_DONE), ph)
                vt32s = vt32.index(st)
                vt32s.slice(0, 128, dim=0).store(o0)
                vt32s.slice(128, 128, dim=0).store(o1)
                vt32s.slice(256, 128, dim=0).store(o2)
                vt32s.slice(384, 128, dim=0).store(o3)
            else:
                mbarrier.wait(bars.index(4 * st + ST_DONE), ph)
                if DIAG & 1 == 0:  # (DIAG & 1: no transpose; P.V reads K as V^T)
                    _transpose_in_place(k32.index(st), vt32.index(st), TR_L)
            fence_async_shared()  # V^T's stores, before wgmma (the async proxy) reads them
            _barrier()
            mbarrier.arrive(bars.index(4 * st + VT_READY))


@gluon.jit
def _group_g_sep(kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, k32, vt32, bars, TR_L: gl.constexpr,
                 ROPE: gl.constexpr):
    """SEP, one raw stage and V^T in a buffer of its own: tile j's V^T is made as soon as its rows land (beside M's
    S^T) and stored once M's P.V of tile j - 1 is done; tile j + 1 is gathered once M's S^T of tile j is done."""
    k32s = k32.index(0)
    vt32s = vt32.index(0)
    _gather(kv, stride_row, num_slots, idx_row, n_tiles, 0, kn8.index(0), kr8.index(0), bars.index(READY),
            bars.index(ST_DONE), 0, False, ROPE)
    for j in range(n_tiles):
        ph = j & 1
        mbarrier.wait(bars.index(READY), ph)
        o0 = _transposed_block(k32s, 0, TR_L)
        o1 = _transposed_block(k32s, 1, TR_L)
        o2 = _transposed_block(k32s, 2, TR_L)
        o3 = _transposed_block(k32s, 3, TR_L)
        mbarrier.wait(bars.index(FREE), ph ^ 1, pred=j >= 1)  # M's P.V of tile j - 1 is done with V^T
        vt32s.slice(0, 128, dim=0).store(o0)
        vt32s.slice(128, 128, dim=0).store(o1)
        vt32s.slice(256, 128, dim=0).store(o2)
        vt32s.slice(384, 128, dim=0).store(o3)
        fence_async_shared()  # V^T's stores, before wgmma (the async proxy) reads them
        _barrier()  # (also: every warp has read the stage)
        mbarrier.arrive(bars.index(VT_READY))
        if j + 1 < n_tiles:
            _gather(kv, stride_row, num_slots, idx_row, n_tiles, j + 1, kn8.index(0), kr8.index(0), bars.index(READY),
                    bars.index(ST_DONE), ph, True, ROPE)


@gluon.jit
def _group_m(q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, vt_0, vt_1, qn8, qr8, p8, bars, out, stride_ot,
             stride_oh, score_scale, out_scale, n_tiles, zero, dbg, dbg_s, DEBUG: gl.constexpr, DIAG: gl.constexpr,
             ROPE: gl.constexpr, NST: gl.constexpr):
    """S^T, the softmax and O^T of every tile: the keys are wgmma's M, the heads its N."""
    S2_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 32])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 16, 32])
    KEYS: gl.constexpr = gl.SliceLayout(1, O_L)
    HEADS: gl.constexpr = gl.SliceLayout(0, O_L)
    q_unscale = _load_q_halves(q, stride_qt, stride_qh, t, qn8.index(0), qr8.index(0), ROPE)
    s_scale = score_scale * gl.convert_layout(q_unscale, HEADS)
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=HEADS)
    l_k = gl.zeros([BLOCK_N, BLOCK_H], gl.float32, layout=O_L)  # row sums per key row, summed across warps once
    acc = gl.zeros([D_NOPE, BLOCK_H], gl.float32, layout=O_L)
    slot_nx = _slots(idx_row, 0, n_tiles, KEYS)
    for j in range(n_tiles):
        # (an index the compiler cannot prove 0 or loop-invariant, so each wgmma's descriptor is made where it is
        # issued: hoisted out of the loop, they take registers and spill)
        z = j * zero
        st = j % NST
        ph = (j // NST) & 1
        slot = slot_nx
        slot_nx = _slots(idx_row, j + 1, n_tiles, KEYS)  # a tile ahead (cp.async zero-fills missing rows)
        mbarrier.wait(bars.index(4 * st + READY), ph)
        fence_async_shared()  # the rows cp.async wrote, before wgmma reads them
        s2 = gl.zeros([BLOCK_N, 2 * BLOCK_H], gl.float32, layout=S2_L)
        s2 = warpgroup_mma(kn8.index(z + st), qn8.index(z).permute((1, 0)), s2, use_acc=False, is_async=True)
        if ROPE:
            s2 = warpgroup_mma(kr8.index(z + st), qr8.index(z).permute((1, 0)), s2, is_async=True)
        s2 = warpgroup_mma_wait(0, deps=[s2])
        _barrier()  # every warp's S^T is done with K
        mbarrier.arrive(bars.index(4 * st + ST_DONE))
        s = _summed_scores(s2, O_L) * s_scale[None, :]
        if DEBUG:  # tile 0's scaled scores to dbg_s[t] (float32 [64, 16])
            if j == 0:
                r = gl.arange(0, BLOCK_N, layout=KEYS)
                h = gl.arange(0, BLOCK_H, layout=HEADS)
                gl.store(dbg_s + t * (BLOCK_N * BLOCK_H) + r[:, None] * BLOCK_H + h[None, :], s)
        s = gl.where(((slot >= 0) & (slot < num_slots))[:, None], s, float("-inf"))
        m_i, l_k, acc = _softmax_p(s, m_i, l_k, acc, p8)
        mbarrier.wait(bars.index(4 * st + VT_READY), ph)
        if DEBUG:  # tile 0's V^T as M sees it to dbg[t] ([512, 64] bytes)
            if j == 0:
                vt = vt_0.index(z)  # (tile 0 is stage 0's)
                LB: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])
                db = gl.arange(0, 64, layout=gl.SliceLayout(1, LB))
                kb = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, LB))
                for c in gl.static_range(8):
                    gl.store(dbg + t * 32768 + (c * 64 + db[:, None]) * BLOCK_N + kb[None, :],
                             vt.slice(c * 64, 64, dim=0).load(LB).to(gl.uint8, bitcast=True))
        if DIAG & 2 == 0:  # (DIAG & 2: no P.V)
            # each stage's V^T its own view (the whole buffer's view indexed by the stage took P.V's wgmmas out of
            # range under compute-sanitizer: session 41's call 15)
            if st == 0:
                acc = _pv(vt_0.index(z), p8, z, acc)
            else:
                acc = _pv(vt_1.index(z), p8, z, acc)
        _barrier()
        mbarrier.arrive(bars.index(4 * st + FREE))
    _write_out(acc, l_k, out, t, stride_ot, stride_oh, out_scale, O_L)


@gluon.jit
def _pv(vt, p8, z, acc):
    acc = warpgroup_mma(vt, p8.index(2 * z).permute((1, 0)), acc, is_async=True)
    acc = warpgroup_mma(vt, p8.index(2 * z + 1).permute((1, 0)), acc, is_async=True)
    return warpgroup_mma_wait(0, deps=[acc])


@gluon.jit
def proto_fp8_raw(q, stride_qt, stride_qh, kv, stride_row, num_slots, idx, stride_it, out, stride_ot, stride_oh,
                  score_scale, out_scale, zero, dbg, dbg_s, TOPK: gl.constexpr, TR_L: gl.constexpr,
                  DEBUG: gl.constexpr = False, DIAG: gl.constexpr = 0, EARLY: gl.constexpr = False,
                  ROPE: gl.constexpr = True, SEP: gl.constexpr = False, NST: gl.constexpr = 2):
    """NST: 2 stages, V^T made in place (SEP False), or 1 with V^T in a buffer of its own (SEP True)."""
    t = gl.program_id(0).to(gl.int64)
    kn8 = gl.allocate_shared_memory(gl.float8e4nv, [NST, BLOCK_N, D_NOPE], SW128)
    kr8 = gl.allocate_shared_memory(gl.float8e4nv, [NST, BLOCK_N, D_ROPE], SW64)
    qn8 = gl.allocate_shared_memory(gl.float8e4nv, [1, 2 * BLOCK_H, D_NOPE], SW128)
    qr8 = gl.allocate_shared_memory(gl.float8e4nv, [1, 2 * BLOCK_H, D_ROPE], SW64)
    p8 = gl.allocate_shared_memory(gl.float8e4nv, [2, BLOCK_H, BLOCK_N], SW64)
    k32 = _reinterpret(kn8, gl.int32, [NST, BLOCK_N, D_NOPE // 4], SW128_32)
    if SEP:
        gl.static_assert(NST == 1, "SEP: one raw stage")
        vt_0 = gl.allocate_shared_memory(gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64)
        vt_1 = vt_0
        vt32 = _reinterpret(vt_0, gl.int32, [1, D_NOPE, BLOCK_N // 4], SW64_32)
    else:
        gl.static_assert(NST == STAGES, "in place: two stages")
        # each stage's K columns as V^T [512, 64] (64-byte swizzle), for M's P.V
        vt_0 = _reinterpret(kn8.index(0), gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64)
        vt_1 = _reinterpret(kn8.index(1), gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64)
        vt32 = _reinterpret(kn8, gl.int32, [NST, D_NOPE, BLOCK_N // 4], SW64_32)
    bars = gl.allocate_shared_memory(gl.int64, [4 * NST, 1], mbarrier.MBarrierLayout())
    for b in gl.static_range(4 * NST):
        mbarrier.init(bars.index(b), count=128 if b % 4 == READY else 1)
    idx_row = idx + t * stride_it
    n_tiles = TOPK // BLOCK_N
    if SEP:
        gl.warp_specialize([
            (_group_m, (q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, vt_0, vt_1, qn8, qr8, p8, bars,
                        out, stride_ot, stride_oh, score_scale, out_scale, n_tiles, zero, dbg, dbg_s, DEBUG, DIAG,
                        ROPE, NST)),
            (_group_g_sep, (kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, k32, vt32, bars, TR_L, ROPE)),
        ], [4], [GATHER_REGS])
    else:
        gl.warp_specialize([
            (_group_m, (q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, vt_0, vt_1, qn8, qr8, p8, bars,
                        out, stride_ot, stride_oh, score_scale, out_scale, n_tiles, zero, dbg, dbg_s, DEBUG, DIAG,
                        ROPE, NST)),
            (_group_g, (kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, k32, vt32, bars, DIAG, TR_L, EARLY,
                        ROPE)),
        ], [4], [GATHER_REGS])


@gluon.jit
def check_transpose(k_ptr, v_back, TR_L: gl.constexpr):
    """Unit check: K [64, 512] e4m3 bytes stored into a stage as cp.async places them, transposed in place; the V^T
    view read back into v_back [512, 64]."""
    GC: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])
    stages = gl.allocate_shared_memory(gl.float8e4nv, [1, BLOCK_N, D_NOPE], SW128)
    stage = stages.index(0)
    k32 = _reinterpret(stages, gl.int32, [1, BLOCK_N, D_NOPE // 4], SW128_32).index(0)
    vt32 = _reinterpret(stages, gl.int32, [1, D_NOPE, BLOCK_N // 4], SW64_32).index(0)
    vt = _reinterpret(stages, gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64).index(0)
    rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, GC)).to(gl.int64) * D_NOPE
    for c in gl.static_range(D_NOPE // 128):
        cols = c * 128 + gl.arange(0, 128, layout=gl.SliceLayout(0, GC))
        stage.slice(c * 128, 128, dim=1).store(gl.load(k_ptr + rows[:, None] + cols[None, :]).to(gl.float8e4nv,
                                                                                                 bitcast=True))
    _barrier()
    _transpose_in_place(k32, vt32, TR_L)
    _barrier()
    LB: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])
    db = gl.arange(0, 64, layout=gl.SliceLayout(1, LB))
    kb = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, LB))
    for c in gl.static_range(8):
        gl.store(v_back + (c * 64 + db[:, None]) * BLOCK_N + kb[None, :],
                 vt.slice(c * 64, 64, dim=0).load(LB).to(gl.uint8, bitcast=True))


# The kernels checked and timed: (TR_LAYOUTS key, EARLY, SEP). Session 41 call 17 (an H100, L2 pool / suite's): layout 0
# 173.7 / 178.9 us, layout 1 119.0 / 127.4, no transpose 78.3 / 110.9 (shipped 115.4 / 144.8); call 18: layout 1
# 118.9 / 126.8, early 116.9 / 124.5, no transpose 78.9 / 107.8 (shipped 115.4 / 143.1).
KERNELS = {"two stages, V^T in place (early)": (1, True, False), "one stage, V^T of its own": (1, True, True)}


def launch(q, cache_u8, idx, out, sm_scale, kv_scale, dbg=None, diag=0, trl=1, early=True, sep=False):
    """dbg: None, or (uint8 [T, 512, 64], float32 [T, 64, 16]) for each token's tile 0 as M sees it: V^T, scores."""
    proto_fp8_raw[(q.shape[0],)](q, q.stride(0), q.stride(1), cache_u8, cache_u8.stride(0), cache_u8.shape[0], idx,
                                 idx.stride(0), out, out.stride(0), out.stride(1),
                                 sm_scale * kv_scale * 1.4426950408889634, kv_scale, 0,
                                 *((cache_u8, out) if dbg is None else dbg), TOPK=idx.shape[1],
                                 DEBUG=dbg is not None, DIAG=diag, TR_L=TR_LAYOUTS[trl], EARLY=early,
                                 ROPE=q.shape[-1] > D_NOPE, SEP=sep, NST=1 if sep else 2,
                                 num_warps=4, maxnreg=128)


def compile_only() -> int:
    """Compile the kernel and the unit check for sm_90a and print their resources (no GPU)."""
    import re
    from triton.backends.compiler import GPUTarget
    from sparsemla.gen.compile_check import _ptxas_resources
    sig = {"q": "*bf16", "stride_qt": "i32", "stride_qh": "i32", "kv": "*u8", "stride_row": "i32",
           "num_slots": "i32", "idx": "*i32", "stride_it": "i32", "out": "*bf16", "stride_ot": "i32",
           "stride_oh": "i32", "score_scale": "fp32", "out_scale": "fp32", "zero": "i32", "dbg": "*u8",
           "dbg_s": "*fp32", "TOPK": "constexpr", "DEBUG": "constexpr",
           "DIAG": "constexpr", "TR_L": "constexpr", "EARLY": "constexpr", "ROPE": "constexpr",
           "SEP": "constexpr", "NST": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)}
    target = GPUTarget("cuda", 90, 32)
    for debug, trl, early, rope, sep in ((True, 1, True, True, False), (False, 0, False, True, False),
                                         (False, 1, False, True, False), (False, 1, True, True, False),
                                         (False, 1, True, False, False), (False, 1, True, True, True),
                                         (False, 1, True, False, True)):
        k = triton.compile(gluon._runtime.GluonASTSource(proto_fp8_raw, sig, {"TOPK": 2048, "DEBUG": debug, "DIAG": 0,
                                                                              "TR_L": TR_LAYOUTS[trl],
                                                                              "EARLY": early, "ROPE": rope,
                                                                              "SEP": sep, "NST": 1 if sep else 2},
                                                         attrs=attrs),
                           target=target, options={"num_warps": 4, "maxnreg": 128})
        ptx = k.asm["ptx"]
        print(f"Triton {triton.__version__} proto_fp8_raw DEBUG {debug} layout {trl} EARLY {early} ROPE {rope} SEP "
              f"{sep}: smem "
              f"{k.metadata.shared} B; wgmma {len(re.findall(r'wgmma.mma_async', ptx))}; cp.async "
              f"{len(re.findall(r'cp.async.cg', ptx))}; ld.shared {len(re.findall(r'ld.shared', ptx))}; st.shared "
              f"{len(re.findall(r'st.shared', ptx))}; regs / spill: {_ptxas_resources(ptx, 'sm90')}")
    for trl, layout in TR_LAYOUTS.items():
        k = triton.compile(gluon._runtime.GluonASTSource(check_transpose, {"k_ptr": "*u8", "v_back": "*u8",
                                                                           "TR_L": "constexpr"}, {"TR_L": layout}),
                           target=target, options={"num_warps": 4})
        print(f"Triton {triton.__version__} check_transpose, transpose layout {trl}: smem {k.metadata.shared} B")
    return 0


def debug_tile0(u8, kv_scale, sm_scale, T, H, topk, slots, d_qk) -> bool:
    """Tile 0 as M sees it (the DEBUG build), against PyTorch: V^T after the in-place transpose, and the scores."""
    dev = u8.device
    g = torch.Generator(device=dev).manual_seed(7)
    idx = torch.randint(0, slots, (T, topk), device=dev, generator=g, dtype=torch.int32)
    q = torch.randn(T, H, d_qk, device=dev, generator=g).bfloat16()
    out = torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)
    dbg = torch.zeros(T, 512, 64, device=dev, dtype=torch.uint8)
    dbg_s = torch.zeros(T, 64, 16, device=dev)
    launch(q, u8, idx, out, sm_scale, kv_scale, (dbg, dbg_s))
    torch.cuda.synchronize()
    rows = u8[idx[:, :64].long()]  # [T, 64, d_qk]
    vt_ok = (dbg == rows[:, :, :512].transpose(1, 2)).float().mean(dim=(1, 2))
    k = rows.view(torch.float8_e4m3fn).float()
    s_ref = torch.einsum("tkd,thd->tkh", k, q.float()) * (sm_scale * kv_scale * 1.4426950408889634)
    s_err = ((dbg_s - s_ref).norm() / s_ref.norm()).item()
    good = bool((vt_ok == 1).all()) and s_err < 1e-2
    print(f"debug tile 0: V^T bytes right in {int((vt_ok == 1).sum())} of {T} tokens (worst {vt_ok.min().item():.3f}); "
          f"scores rel err {s_err:.2e}; output finite {bool(torch.isfinite(out.float()).all())} -> "
          f"{'ok' if good else 'FAIL'}", flush=True)
    return good


def check_kernels(kernels, fmt, cache, kw, T, H, topk, dev) -> bool:
    """Each kernel (name -> fn(q, idx, out)) against the PyTorch reference on three trials of fresh inputs: plain; 1 in
    7 ids -1, an all-invalid token, ids past the cache; a token with large Q and one with small rope."""
    import sparsemla
    from sparsemla.gen.suite import SLOTS
    ok_all = True
    for trial in range(3):
        g = torch.Generator(device=dev).manual_seed(trial)
        idx = torch.randint(0, SLOTS, (T, topk), device=dev, generator=g, dtype=torch.int32)
        if trial == 1:
            idx[idx % 7 == 0] = -1
            idx[3] = -1  # an all-invalid row
            idx[4, :100] = SLOTS + 5  # past the cache: masked like -1
        q = torch.randn(T, H, fmt.d_qk, device=dev, generator=g).bfloat16()
        if trial == 2:
            q[5] *= 1000.0  # a token with large Q (the halves' scale per head)
            q[6, :, :64] *= 1e-3
        ref = sparsemla.sparse_mla(q, cache, idx.clamp_max(SLOTS - 1).masked_fill(idx >= SLOTS, -1),
                                   sm_scale=fmt.d_qk ** -0.5, kv_format="fp8_e4m3", backend="torch", **kw)
        for name, fn in kernels.items():
            out = torch.full((T, H, 512), float("nan"), device=dev, dtype=torch.bfloat16)
            fn(q, idx, out)
            good, verdict = check_out(out, ref, 3 if trial == 1 else None)
            ok_all &= good
            print(f"trial {trial}, {name}: {verdict}", flush=True)
    return ok_all


def time_kernels(kernels, fmt, cache, kw, fmt_name, T, H, topk, pools, dev):
    """CUDA-graph times of each kernel (name -> fn(q, idx, out)) and the shipped one on each slot pool (the suite's,
    then one that stays in L2: what the SMs need), four input sets a pool, in alternating orders; one table."""
    import sparsemla
    from sparsemla.bench import copy_ceiling_gbs, graph_time_us
    nbytes = T * topk * fmt.d_qk
    copy_gbs = copy_ceiling_gbs(dev)
    rows = []
    for pool in pools:
        sets = []
        for r in range(4):
            g = torch.Generator(device=dev).manual_seed(100 + r)
            idx = torch.randint(0, pool, (T, topk), device=dev, generator=g, dtype=torch.int32)
            q = torch.randn(T, H, fmt.d_qk, device=dev, generator=g).bfloat16()
            sets.append((q, idx, torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)))
        variants = {**{name: [lambda s=s, fn=fn: fn(*s) for s in sets] for name, fn in kernels.items()},
                    "shipped": [lambda s=s: sparsemla.sparse_mla(s[0], cache, s[1], sm_scale=fmt.d_qk ** -0.5,
                                                                 kv_format="fp8_e4m3", out=s[2], **kw) for s in sets]}
        times = {n: [] for n in variants}
        for rep in range(4):  # alternating orders
            for n in (list(variants) if rep % 2 == 0 else list(variants)[::-1]):
                times[n].append(graph_time_us(variants[n]))
        rows += [(n, pool, sorted(times[n])[2]) for n in variants]
    print(f"\n{torch.cuda.get_device_name()}\n| variant | slot pool | us (median of 4) | GB/s | of copy ceiling "
          f"({copy_gbs:.0f} GB/s) |\n|---|---|---|---|---|")
    for n, pool, us in rows:
        print(f"| {n} {fmt_name} T={T} H={H} | {pool} | {us:.1f} | {nbytes / us / 1e3:.0f} | "
              f"{nbytes / us / 1e3 / copy_gbs:.2f} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--format", default="fp8", choices=["fp8", "fp8_nope"], help="the suite's fp8_e4m3 formats")
    ap.add_argument("--l2-slots", type=int, default=16384, help="the L2-resident pool timed after the suite's")
    ap.add_argument("--debug-only", action="store_true", help="the unit check and the DEBUG build's tile 0 only")
    ap.add_argument("--plain-only", action="store_true", help="one plain launch only (e.g. under compute-sanitizer)")
    ap.add_argument("--diag", type=int, default=0, help="with --plain-only: bits 1 no transpose, 2 no P.V")
    ap.add_argument("--sep", action="store_true", help="with --plain-only: one stage, V^T in a buffer of its own")
    ap.add_argument("--plain-slots", type=int, default=0, help="with --plain-only: the slot pool (0: the suite's)")
    args = ap.parse_args()
    if args.compile:
        return compile_only()
    from sparsemla.bench import FORMATS, make_cache
    from sparsemla.gen.suite import SLOTS
    dev = torch.device("cuda")
    T, H, topk = args.tokens, 16, 2048
    k8 = (torch.randn(64, 512, device=dev) * 4).to(torch.float8_e4m3fn)
    v_back = torch.empty(512, 64, device=dev, dtype=torch.uint8)
    ok_all = True
    for trl, layout in TR_LAYOUTS.items():
        check_transpose[(1,)](k8.view(torch.uint8), v_back, TR_L=layout, num_warps=4)
        ok = bool(torch.equal(v_back, k8.view(torch.uint8).t()))
        ok_all &= ok
        print(f"unit: in-place transpose, layout {trl} {'ok' if ok else 'FAIL'}", flush=True)
    fmt = FORMATS[args.format]
    d_qk = fmt.d_qk
    cache, kw = make_cache(fmt, dev)
    u8 = cache.view(torch.uint8)
    sm_scale = d_qk ** -0.5
    if args.plain_only:
        idx = torch.randint(0, args.plain_slots or SLOTS, (T, topk), device=dev, dtype=torch.int32)
        q = torch.randn(T, H, d_qk, device=dev).bfloat16()
        out = torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)
        launch(q, u8, idx, out, sm_scale, kw["kv_scale"], diag=args.diag, sep=args.sep)
        torch.cuda.synchronize()
        finite = bool(torch.isfinite(out.float()).all())
        print(f"plain launch (DIAG {args.diag}, SEP {args.sep}): output finite {finite}")
        return 0
    if args.debug_only:
        return 0 if ok_all and debug_tile0(u8, kw["kv_scale"], sm_scale, T, H, topk, SLOTS, d_qk) else 1
    kernels = {f"raw e4m3, {name}": (lambda q, idx, out, trl=trl, early=early, sep=sep: launch(
        q, u8, idx, out, sm_scale, kw["kv_scale"], trl=trl, early=early, sep=sep))
        for name, (trl, early, sep) in KERNELS.items()}
    ok_all &= check_kernels(kernels, fmt, cache, kw, T, H, topk, dev)
    kernels["raw e4m3, no transpose (wrong)"] = lambda q, idx, out: launch(q, u8, idx, out, sm_scale, kw["kv_scale"],
                                                                           diag=1)
    time_kernels(kernels, fmt, cache, kw, args.format, T, H, topk, (SLOTS, args.l2_slots), dev)
    print("correctness:", "ok" if ok_all else "FAIL")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
