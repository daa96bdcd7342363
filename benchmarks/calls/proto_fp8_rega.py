"""Issue 7, the fp8 T=256 H=16 rows (session 42 prototype): proto_fp8_raw.py's raw-row kernel with V^T made in
registers, as P.V's A operand, instead of in shared memory.

Why: session 41 (calls 8-18, an H100) and session 42's call 1: the raw-row kernel gathers the e4m3 rows by cp.async,
S^T and P.V on e4m3 operands; without V^T (wrong results) it takes 78 us on an L2-resident slot pool, with V^T made in
shared memory by group G 116-117 us. fp8 wgmma reads only K-major operands from shared memory, but its A may come from
registers, and O^T's rows (the 512 dims) may be in any order. So here group M reads each tile's K as 16-byte words
once (a thread: 4 keys x 16 dims, 4 times over; conflict-free, each key's 128 bytes a wavefront), turns each 4 x 4
block of bytes by byte permutes (proto_fp8_raw's), and hands the words to wgmma as A as they are: thread (warp w, lane
4a + q) holds dims 128 w + 16 a + 0..15 of keys 4 q + i (+16, +32, +48), which is the register fragment of wgmma's A
for O^T's row m = 128 e + 64 b1 + 16 w + 8 b0 + a, dim 128 w + 16 a + 4 e + 2 b1 + b0 (the output is written through
that map; the layout conversion into wgmma's operand is asserted trivial, and the compiler packs the bytes back with
no instructions). No V^T in shared memory, no second group's transpose, and the stage is free once S^T and these loads
are done, before the softmax and P.V.
- Group G (4 warps) only gathers: tile j's raw rows by cp.async into stage j % NST (proto_fp8_raw's _gather).
- Group M: S^T issued on the stage, V^T's operand built in registers while it runs, the stage freed, the softmax (P x
  256's two e4m3 halves, proto_fp8_mma's), then O^T += V^T P^T with A from registers.
Shared memory a program: NST stages of 36 KB (K 32 KB, rope 4 KB), Q's halves 18 KB, P's 2 KB: two stages 92.5 KB
(two programs an SM), three 128.5 KB (one).
Variants, each measured (session 42, an H100; benchmarks/results/session42/README.md):
- VT_SMEM: M stores the words it loaded as V^T over K (16-byte stores, rows permuted so a quarter warp fills two
  64-byte rows: no bank conflicts) and P.V reads it from shared memory. Slower (130 us on L2).
- PIPE: P.V of tile j left in flight while tile j + 1's S^T is issued. Slower (129).
- ONE_BAR 1: the max down the keys with one barrier (_head_max: each warp's partials through shared memory, read into
  registers), P's halves in buffers of their own (in one buffer Triton's barrier analysis put a barrier between their
  stores), the stage freed beside the P barrier (the analysis puts one before an mbarrier arrive that follows
  shared-memory stores): M's barriers a tile 7 -> 4. ONE_BAR 2 (no end-of-tile barrier) and 3 (the lazy max: the running max
  kept while no score exceeds it by 0.75, one vote and one barrier a tile) gained nothing more.
- KPERM (DIAG 32, with ONE_BAR): P.V's keys reordered so each thread's two keys of a head are adjacent bytes of P^T
  (16-bit stores, not bytes); the operand's loads take the rows in that order at no cost.
- LSE, a per-head sink, topk_length and fewer than 16 heads (HAS_LSE, HAS_SINK, HAS_TOPK_LEN, num_heads).

Outcome (session 42, calls 2-11 on H100s; benchmarks/results/session42/README.md): correct in every form (rel err
1.6-2.7e-3 as proto_fp8_raw.py; LSE within 1e-3; NaN in the slots the lists do not reach). ONE_BAR 1 with KPERM at
T=256 H=16: 93.6 us on an L2-resident pool (fp8; fp8_nope 86.5) against the shipped kernel's 116.2 (110.1), and 126.5
on the suite's pool against 144.6 (fp8_nope 106.5 against 123.0): 1.14-1.16x where the H100's memory bounds, an SM
floor 1.24-1.27x lower and under the H200 targets (0.7 of the copy ceiling: 103.4 us; fp8_nope 92.0). With LSE, sink
and topk_length 98.4 / 86.0. Not yet timed on an H200. In the runtime as GluonKernel.raw
(templates/sparse_mla_gluon_raw.py.jinja: ONE_BAR 1 with KPERM, one split). No per-group scales: fp8_ds_mla and
model1's groups of 128 / 64 dims cut across O^T's m-blocks in this row order.

Scope: fp8_e4m3, d_qk 576 or 512 (--format fp8 or fp8_nope), up to 16 heads, one split, a flat cache.
  python3 benchmarks/calls/proto_fp8_rega.py            (GPU: correctness, timing beside proto_fp8_raw's, the shipped)
  python3 benchmarks/calls/proto_fp8_rega.py --compile  (no GPU: compile for sm_90a, print registers / spills / smem)
"""
import argparse
import os
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proto_fp8_mma import (  # noqa: E402
    BLOCK_H, BLOCK_N, D_NOPE, D_ROPE, P_SCALE, _halves, _load_q_halves, _reinterpret, _slots, _softmax_p, check_out,
    _summed_scores)
from proto_fp8_raw import (  # noqa: E402
    HI_HALVES, HI_PAIRS, LO_HALVES, LO_PAIRS, SW128, SW128_32, SW64, SW64_32, _barrier, _gather, _prmt, _pv,
    check_kernels, time_kernels)
import proto_fp8_raw  # noqa: E402

# mbarriers of stage s: ready[s], its rows landed (one cp.async arrive from each of G's 128 threads); free[s], M's S^T
# and V^T loads are done with it
GATHER_REGS = gl.constexpr(56)
# A stage's K as 32-bit words [64 keys, 128 words] as M loads it: a thread's 4 keys (4 q + i, +16, +32, +48: registers)
# of 4 words (16 bytes: registers), lanes 4 a + q, warps w: dims 128 w + 16 a + 0..15
VT_LOAD = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [1, 0], [2, 0], [16, 0], [32, 0]], lane_bases=[[4, 0], [8, 0], [0, 4], [0, 8], [0, 16]],
    warp_bases=[[0, 32], [0, 64]], block_bases=[], shape=[BLOCK_N, D_NOPE // 4]))
# The same with KPERM: A's key 4 q + i (+16 g + 32 s) is the stage's row 8 i0 + 4 q1 + 2 q0 + i1 (+16 g + 32 s)
VT_LOAD_K = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [8, 0], [1, 0], [16, 0], [32, 0]], lane_bases=[[2, 0], [4, 0], [0, 4], [0, 8], [0, 16]],
    warp_bases=[[0, 32], [0, 64]], block_bases=[], shape=[BLOCK_N, D_NOPE // 4]))
# The same for VT_SMEM: a thread's 16 keys 16 q + 0..15 (registers) of 4 words, lanes 4 a + q, warps w
VT_LOAD_S = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [1, 0], [2, 0], [4, 0], [8, 0]], lane_bases=[[16, 0], [32, 0], [0, 4], [0, 8], [0, 16]],
    warp_bases=[[0, 32], [0, 64]], block_bases=[], shape=[BLOCK_N, D_NOPE // 4]))
# _head_max's partials [4 warps, 16 heads] as each thread reads them: the 4 warps' in registers, the heads as the
# scores' slice layout holds them (registers: head 1, 8; lanes: 2, 4)
RED_L = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[1, 0], [2, 0], [0, 1], [0, 8]], lane_bases=[[0, 2], [0, 4], [0, 0], [0, 0], [0, 0]],
    warp_bases=[[0, 0], [0, 0]], block_bases=[], shape=[4, BLOCK_H]))


@gluon.jit
def _head_max(s, red, O_L: gl.constexpr):
    """ONE_BAR: the max of s [64 keys, 16 heads] down the keys with one barrier (gl.max takes three): each warp's max
    of its 16 rows (shuffles) into red [4, 16], then each thread's 4 partials from registers. The barrier also stands
    for the one after S^T: every warp's S^T and loads are done with the stage. (A warp writes red again only after the
    next tile's barrier, which every warp passes after reading it.)"""
    red.store(gl.max(gl.reshape(s, [4, BLOCK_N // 4, BLOCK_H]), axis=1))
    _barrier()
    return gl.convert_layout(gl.max(red.load(RED_L), axis=0), gl.SliceLayout(0, O_L), assert_trivial=True)


# ONE_BAR 3: the running max is kept while no score exceeds it by more than LAZY_TAU (log2 units), so P x 256 stays
# under 256 x 2^0.75 = 431 (e4m3's largest is 448)
LAZY_TAU = gl.constexpr(0.75)
# _cta_any's flags [4 warps, 1] as each thread reads them: all four in registers
FLAGS_L = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[1, 0], [2, 0]], lane_bases=[[0, 0]] * 5, warp_bases=[[0, 0], [0, 0]], block_bases=[], shape=[4, 1]))


@gluon.jit
def _cta_any(x, flags):
    """ONE_BAR 3: whether any of x [64, 16] (int32, the scores' layout) is nonzero in any thread, as a scalar, with one
    barrier: each thread's values or'ed in registers, each warp's by vote.any, lane 0's of each warp read by all."""
    x = gl.reshape(x, [4, 2, 8, 2, 4, 2])  # rows: warp, +8 (register), lane / 4; heads: +8 (register), lane % 4, +1
    x = gl.max(gl.max(gl.max(x, axis=5), axis=3), axis=1)  # [4, 8, 4]: one a thread
    v = gl.inline_asm_elementwise("{ .reg .pred p; setp.ne.s32 p, $1, 0; vote.sync.any.pred p, p, -1; "
                                  "selp.s32 $0, 1, 0, p; }", "=r,r", [x], dtype=gl.int32, is_pure=False, pack=1)
    flags.store(gl.reshape(v, [4, 32]))
    _barrier()
    return gl.max(gl.max(flags.slice(0, 1, dim=1).load(FLAGS_L), axis=1), axis=0) != 0


@gluon.jit
def _p_keys(p, KPERM: gl.constexpr):
    """P [64 stage rows, 16 heads] in P.V's key order: with KPERM row r at 16 (r >> 4) + 2 (r & 7) + ((r >> 3) & 1),
    so each thread's rows r and r + 8 are adjacent bytes of P^T (16-bit stores)."""
    if KPERM:
        p = gl.reshape(gl.permute(gl.reshape(p, [2, 2, 2, 8, BLOCK_H]), (0, 1, 3, 2, 4)), [BLOCK_N, BLOCK_H])
    return p


@gluon.jit
def _softmax_p1(s, m_i, l_k, acc, p_hi8, p_lo8, red, flags, free, O_L: gl.constexpr, LAZY: gl.constexpr,
                KPERM: gl.constexpr):
    """ONE_BAR: _softmax_p with _head_max's max, P's halves in buffers of their own (in one buffer, the compiler puts a
    barrier between their stores), and the stage freed (free). LAZY (ONE_BAR 3): the max only where a score exceeds
    the running max by more than LAZY_TAU (_cta_any), else the running max as it is."""
    if LAZY:
        if _cta_any((s > (m_i + LAZY_TAU)[None, :]).to(gl.int32), flags):
            m_new = gl.maximum(m_i, _head_max(s, red, O_L))
        else:
            m_new = m_i
    else:
        m_new = gl.maximum(m_i, _head_max(s, red, O_L))
    m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = gl.exp2(m_i - m_use)
    p = gl.exp2(s - m_use[None, :])
    l_k = l_k * alpha[None, :] + p
    p_hi, p_lo = _halves(p * P_SCALE)
    p_hi8.index(0).store(_p_keys(p_hi, KPERM).permute((1, 0)))
    p_lo8.index(0).store(_p_keys(p_lo, KPERM).permute((1, 0)))
    fence_async_shared()
    # the stage is free since _head_max's barrier; arrived here, beside a barrier, because the compiler puts one after
    # each arrive before the next shared-memory access
    mbarrier.arrive(free)
    _barrier()  # all four warps' P, before the warp group's wgmma reads it
    return m_new, l_k, acc * alpha[None, :]


@gluon.jit
def _split4(x):
    """x [..., 4] -> its four slices on the last axis (registers)."""
    x02, x13 = gl.split(gl.reshape(x, x.shape[:-1] + [2, 2]))
    x0, x2 = gl.split(x02)
    x1, x3 = gl.split(x13)
    return x0, x1, x2, x3


@gluon.jit
def _join4(x0, x1, x2, x3):
    """The inverse of _split4."""
    y = gl.join(gl.join(x0, x2), gl.join(x1, x3))
    return gl.reshape(y, y.shape[:-2] + [4])


@gluon.jit
def _transpose4(x):
    """x [..., 4]: 4 keys' words (4 dims each) -> [..., 4]: 4 dims' words (4 keys each), by byte permutes."""
    k0, k1, k2, k3 = _split4(x)
    t0 = _prmt(k0, k1, LO_PAIRS)  # k0.0 k1.0 k0.1 k1.1
    t1 = _prmt(k2, k3, LO_PAIRS)
    t2 = _prmt(k0, k1, HI_PAIRS)  # k0.2 k1.2 k0.3 k1.3
    t3 = _prmt(k2, k3, HI_PAIRS)
    return _join4(_prmt(t0, t1, LO_HALVES), _prmt(t0, t1, HI_HALVES), _prmt(t2, t3, LO_HALVES),
                  _prmt(t2, t3, HI_HALVES))


@gluon.jit
def _vt_rows(k32s):
    """VT_SMEM: the stage's K (k32s: [64 keys, 128 words]) as V^T's words [512 rows, 16 words] to store in place:
    row 128 w + 32 e + 8 b + a is dim 128 w + 16 a + 4 e + b, word c keys 4 c..4 c + 3. Loads (16 bytes) and stores
    (16 bytes: a quarter warp's 8 lanes fill two 64-byte rows) without bank conflicts."""
    x = gl.reshape(k32s.load(VT_LOAD_S), [4, 4, 4, 4, 8, 4])  # keys q c i, words w a e
    y = _transpose4(gl.permute(x, (0, 1, 3, 4, 5, 2)))  # q c w a e | b
    return gl.reshape(gl.permute(y, (2, 4, 5, 3, 0, 1)), [D_NOPE, BLOCK_N // 4])  # w e b a | q c


@gluon.jit
def _vt_operand(k32s, DOT_A: gl.constexpr, NO_PRMT: gl.constexpr, KPERM: gl.constexpr = False):
    """The stage's K (k32s: [64 keys, 128 words], 128-byte swizzle) as O^T's A operand [512 rows m, 64 keys] in
    registers: row m is dim 128 w + 16 a + 4 e + 2 b1 + b0 for m = 128 e + 64 b1 + 16 w + 8 b0 + a. Nothing moves
    between threads: the layout conversion at the end is asserted trivial. KPERM: A's key k is the stage's row
    16 (k >> 4) + 8 (k & 1) + ((k >> 1) & 7) (_p_keys' order), else row k."""
    if KPERM:  # rows 8 i0 + 4 q1 + 2 q0 + i1 (+16 g + 32 s) for A's key 4 q + i (+16 g + 32 s)
        x = gl.reshape(k32s.load(VT_LOAD_K), [2, 2, 2, 2, 2, 2, 4, 8, 4])  # keys s g i0 q1 q0 i1, words w a e
        x = gl.reshape(gl.permute(x, (0, 1, 3, 4, 6, 7, 8, 5, 2)), [2, 2, 4, 4, 8, 4, 4])  # s g q w a e | i
    else:
        x = gl.reshape(k32s.load(VT_LOAD), [2, 2, 4, 4, 4, 8, 4])  # keys s g q i, words w a e
        x = gl.permute(x, (0, 1, 2, 4, 5, 6, 3))  # s g q w a e | i
    y = x if NO_PRMT else _transpose4(x)  # s g q w a e | b (NO_PRMT, a DIAG: untransposed, timing only)
    # the words as bytes (the compiler packs them straight back: no instructions)
    yb = _join4(y.to(gl.int8), (y >> 8).to(gl.int8), (y >> 16).to(gl.int8), (y >> 24).to(gl.int8))
    yb = gl.permute(gl.reshape(yb, [2, 2, 4, 4, 8, 4, 2, 2, 4]), (5, 6, 3, 7, 4, 0, 1, 2, 8))  # e b1 w b0 a | s g q i
    a = gl.reshape(yb, [D_NOPE, BLOCK_N]).to(gl.float8e4nv, bitcast=True)
    return gl.convert_layout(a, DOT_A, assert_trivial=True)


@gluon.jit
def _write_out_rows(acc, l_k, m_i, out, t, stride_ot, stride_oh, out_scale, num_heads, lse, stride_lt, sink,
                    O_L: gl.constexpr, VT_SMEM: gl.constexpr, HAS_LSE: gl.constexpr = False,
                    HAS_SINK: gl.constexpr = False):
    """O^T (rows in _vt_rows' order with VT_SMEM, else _vt_operand's) normalized by the row sums into out[t]'s first
    num_heads heads as bfloat16; with HAS_SINK a per-head sink (natural log units, float32) joins the denominator,
    with HAS_LSE the natural log of the sum (without the sink; +inf for a head with nothing valid, whose output
    is 0) goes to lse[t]."""
    heads = gl.arange(0, BLOCK_H, layout=gl.SliceLayout(0, O_L))
    head_ok = heads < num_heads
    l_o = gl.sum(l_k, axis=0)
    den = l_o
    if HAS_SINK:  # exp(sink) in P's units: 2^(sink log2 e - m)
        m_use = gl.where(m_i == float("-inf"), 0.0, m_i)
        sk = gl.load(sink + heads, mask=head_ok, other=float("-inf"))
        den = l_o + gl.exp2(sk * 1.4426950408889634 - m_use)
    inv = gl.where(l_o > 0, out_scale / (den * P_SCALE), 0.0)  # a row with nothing valid is 0 (and +inf sinks)
    if HAS_LSE:
        lse_h = gl.where(l_o > 0, (m_i + gl.log2(l_o)) * 0.6931471805599453, float("inf"))
        gl.store(lse + t * stride_lt + heads, lse_h, mask=head_ok)
    m = gl.arange(0, D_NOPE, layout=gl.SliceLayout(1, O_L))
    if VT_SMEM:  # _vt_rows' rows
        dims = 128 * (m >> 7) + 16 * (m & 7) + 4 * ((m >> 5) & 3) + ((m >> 3) & 3)
    else:  # _vt_operand's
        dims = 128 * ((m >> 4) & 3) + 16 * (m & 7) + 4 * (m >> 7) + 2 * ((m >> 6) & 1) + ((m >> 3) & 1)
    gl.store(out + t * stride_ot + heads.to(gl.int64)[None, :] * stride_oh + dims[:, None],
             (acc * inv[None, :]).to(gl.bfloat16), mask=head_ok[None, :])


@gluon.jit
def check_pv_regs(k_ptr, p_ptr, o_ptr, VT_SMEM: gl.constexpr):
    """Unit check: K [64, 512] and P [16, 64] (e4m3 bytes) stored as the kernel holds them, O^T = V^T P^T with V^T
    from _vt_operand (A from registers) or, with VT_SMEM, from _vt_rows stored in place, written through the row map
    to o_ptr [16, 512] (bfloat16)."""
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 16, 32])
    GC: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])
    stage = gl.allocate_shared_memory(gl.float8e4nv, [1, BLOCK_N, D_NOPE], SW128)
    p8 = gl.allocate_shared_memory(gl.float8e4nv, [2, BLOCK_H, BLOCK_N], SW64)
    rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, GC))
    cols = gl.arange(0, D_NOPE, layout=gl.SliceLayout(0, GC))
    stage.index(0).store(gl.load(k_ptr + rows[:, None] * D_NOPE + cols[None, :]).to(gl.float8e4nv, bitcast=True))
    hr = gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GC))
    kc = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, GC))
    p = gl.load(p_ptr + hr[:, None] * BLOCK_N + kc[None, :]).to(gl.float8e4nv, bitcast=True)
    p8.index(0).store(p)
    p8.index(1).store(gl.zeros_like(p))
    fence_async_shared()
    _barrier()
    k32 = _reinterpret(stage, gl.int32, [1, BLOCK_N, D_NOPE // 4], SW128_32).index(0)
    acc = gl.zeros([D_NOPE, BLOCK_H], gl.float32, layout=O_L)
    if VT_SMEM:
        y = _vt_rows(k32)
        _barrier()
        _reinterpret(stage, gl.int32, [1, D_NOPE, BLOCK_N // 4], SW64_32).index(0).store(y)
        fence_async_shared()
        _barrier()
        acc = _pv(_reinterpret(stage, gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64).index(0), p8, 0, acc)
    else:
        a = _vt_operand(k32, gl.DotOperandLayout(operand_index=0, parent=O_L, k_width=4), False)
        acc = warpgroup_mma(a, p8.index(0).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
    l_k = gl.full([BLOCK_N, BLOCK_H], 1.0 / (BLOCK_N * P_SCALE), gl.float32, layout=O_L)  # (so inv is 1)
    m_i = gl.zeros([BLOCK_H], gl.float32, layout=gl.SliceLayout(0, O_L))
    _write_out_rows(acc, l_k, m_i, o_ptr, 0, D_NOPE, D_NOPE, 1.0, BLOCK_H, o_ptr, 0, o_ptr, O_L, VT_SMEM)


@gluon.jit
def _group_g(kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, ready, free, NST: gl.constexpr,
             ROPE: gl.constexpr, tlen=0, TLEN: gl.constexpr = False):
    """Gathers tile g's raw rows into stage g % NST once M is done with the tile NST before (with TLEN, rows of keys
    tlen and on zero-filled: their slot ids may be anything, and 0 x NaN would reach P.V)."""
    for g in range(n_tiles):
        s = g % NST
        _gather(kv, stride_row, num_slots, idx_row, n_tiles, g, kn8.index(s), kr8.index(s), ready.index(s),
                free.index(s), ((g // NST) & 1) ^ 1, g >= NST, ROPE, tlen, TLEN)


@gluon.jit
def _group_m(q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, k32, vt32, vt_0, vt_1, qn8, qr8, p8, ready, free,
             out, stride_ot, stride_oh, score_scale, out_scale, n_tiles, zero, red, flags, p_hi8, p_lo8, num_heads, lse,
             stride_lt, sink, tlen, HAS_LSE: gl.constexpr, HAS_SINK: gl.constexpr, DIAG: gl.constexpr,
             ROPE: gl.constexpr, NST: gl.constexpr, VT_SMEM: gl.constexpr, ONE_BAR: gl.constexpr):
    """S^T, V^T (as P.V's A in registers, or with VT_SMEM stored over K), the softmax and O^T of every tile: the keys
    are S^T's M, the dims O^T's."""
    S2_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 32])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 16, 32])
    DOT_A: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=O_L, k_width=4)
    KEYS: gl.constexpr = gl.SliceLayout(1, O_L)
    HEADS: gl.constexpr = gl.SliceLayout(0, O_L)
    q_unscale = _load_q_halves(q, stride_qt, stride_qh, t, qn8.index(0), qr8.index(0), ROPE, num_heads, True)
    s_scale = score_scale * gl.convert_layout(q_unscale, HEADS)
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=HEADS)
    l_k = gl.zeros([BLOCK_N, BLOCK_H], gl.float32, layout=O_L)  # row sums per key row, summed across warps once
    acc = gl.zeros([D_NOPE, BLOCK_H], gl.float32, layout=O_L)
    slot_nx = _slots(idx_row, 0, n_tiles, KEYS)
    keys = gl.arange(0, BLOCK_N, layout=KEYS)
    for j in range(n_tiles):
        z = j * zero  # (descriptors made where each wgmma is issued: see proto_fp8_raw.py)
        st = j % NST
        ph = (j // NST) & 1
        slot = slot_nx
        slot_nx = _slots(idx_row, j + 1, n_tiles, KEYS)  # a tile ahead (cp.async zero-fills missing rows)
        mbarrier.wait(ready.index(st), ph)
        fence_async_shared()  # the rows cp.async wrote, before wgmma reads them
        if DIAG & 16 != 0:  # (DIAG & 16: V^T's loads issued before S^T)
            a = _vt_operand(k32.index(z + st), DOT_A, False, DIAG & 32 != 0)
        s2 = gl.zeros([BLOCK_N, 2 * BLOCK_H], gl.float32, layout=S2_L)
        s2 = warpgroup_mma(kn8.index(z + st), qn8.index(z).permute((1, 0)), s2, use_acc=False, is_async=True)
        if ROPE:
            s2 = warpgroup_mma(kr8.index(z + st), qr8.index(z).permute((1, 0)), s2, is_async=True)
        # V^T's words while S^T runs
        if VT_SMEM:
            y = _vt_rows(k32.index(z + st))
        elif DIAG & 16 != 0:
            pass
        elif DIAG & 4 == 0:
            a = _vt_operand(k32.index(z + st), DOT_A, DIAG & 1 != 0, DIAG & 32 != 0)
        else:  # (DIAG & 4: no loads, A a constant; timing only)
            a = gl.full([D_NOPE, BLOCK_N], 0x38, gl.int8, layout=DOT_A).to(gl.float8e4nv, bitcast=True)
        s2 = warpgroup_mma_wait(0, deps=[s2])
        if not ONE_BAR:  # (ONE_BAR: _head_max's barrier)
            _barrier()  # every warp's S^T and loads are done with the stage's K
        if VT_SMEM:
            vt32.index(z + st).store(y)  # (fenced, and the warps met, with P's stores in _softmax_p)
        elif DIAG & 8 == 0 and not ONE_BAR:
            mbarrier.arrive(free.index(st))
        s = _summed_scores(s2, O_L) * s_scale[None, :]
        s = gl.where(((slot >= 0) & (slot < num_slots) & (j * BLOCK_N + keys < tlen))[:, None], s, float("-inf"))
        if ONE_BAR:
            m_i, l_k, acc = _softmax_p1(s, m_i, l_k, acc, p_hi8, p_lo8, red, flags, free.index(st), O_L,
                                        ONE_BAR == 3, DIAG & 32 != 0)
        else:
            m_i, l_k, acc = _softmax_p(s, m_i, l_k, acc, p8)
        if DIAG & 2 == 0:  # (DIAG & 2: no P.V)
            if VT_SMEM:  # each stage's V^T its own view (see proto_fp8_raw.py)
                if st == 0:
                    acc = _pv(vt_0.index(z), p8, z, acc)
                else:
                    acc = _pv(vt_1.index(z), p8, z, acc)
            elif ONE_BAR:
                acc = warpgroup_mma(a, p_hi8.index(z).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma(a, p_lo8.index(z).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(0, deps=[acc])
            else:
                acc = warpgroup_mma(a, p8.index(2 * z).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma(a, p8.index(2 * z + 1).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(0, deps=[acc])
        if ONE_BAR != 2:  # (ONE_BAR 2: none; each warp passed the P.V wait, so P.V is done with P's buffers)
            _barrier()  # (P's buffer is rewritten by the next tile)
        if VT_SMEM or DIAG & 8 != 0:  # (DIAG & 8: the stage freed after P.V, timing only)
            mbarrier.arrive(free.index(st))
    _write_out_rows(acc, l_k, m_i, out, t, stride_ot, stride_oh, out_scale, num_heads, lse, stride_lt, sink, O_L,
                    VT_SMEM, HAS_LSE, HAS_SINK)


@gluon.jit
def _st_issue(kn8, kr8, qn8, qr8, st, z, S2_L: gl.constexpr, ROPE: gl.constexpr):
    """S^T of the tile in stage st against Q's halves, issued (async: one wgmma group, two with ROPE)."""
    s2 = gl.zeros([BLOCK_N, 2 * BLOCK_H], gl.float32, layout=S2_L)
    s2 = warpgroup_mma(kn8.index(z + st), qn8.index(z).permute((1, 0)), s2, use_acc=False, is_async=True)
    if ROPE:
        s2 = warpgroup_mma(kr8.index(z + st), qr8.index(z).permute((1, 0)), s2, is_async=True)
    return s2


@gluon.jit
def _softmax_pv(s2, slot, num_slots, s_scale, m_i, l_k, acc, a, p8, z, O_L: gl.constexpr):
    """PIPE: a tile's softmax (P.V of the tile before waited for), then its P.V issued (two wgmma groups)."""
    s = _summed_scores(s2, O_L) * s_scale[None, :]
    s = gl.where(((slot >= 0) & (slot < num_slots))[:, None], s, float("-inf"))
    m_i, l_k, acc = _softmax_p(s, m_i, l_k, acc, p8)
    acc = warpgroup_mma(a, p8.index(2 * z).permute((1, 0)), acc, is_async=True)
    acc = warpgroup_mma(a, p8.index(2 * z + 1).permute((1, 0)), acc, is_async=True)
    return m_i, l_k, acc


@gluon.jit
def _group_m_pipe(q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, k32, qn8, qr8, p8, ready, free, out,
                  stride_ot, stride_oh, score_scale, out_scale, n_tiles, zero, ROPE: gl.constexpr, NST: gl.constexpr):
    """PIPE: _group_m with A from registers, P.V of tile j left in flight while tile j + 1's S^T is issued; V^T's
    words of tile j + 1 are loaded once P.V of tile j is done with the registers."""
    S2_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 32])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 16, 32])
    DOT_A: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=O_L, k_width=4)
    KEYS: gl.constexpr = gl.SliceLayout(1, O_L)
    HEADS: gl.constexpr = gl.SliceLayout(0, O_L)
    ST_GROUPS: gl.constexpr = 2 if ROPE else 1  # S^T's wgmma groups, left pending when P.V's are waited for
    q_unscale = _load_q_halves(q, stride_qt, stride_qh, t, qn8.index(0), qr8.index(0), ROPE)
    s_scale = score_scale * gl.convert_layout(q_unscale, HEADS)
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=HEADS)
    l_k = gl.zeros([BLOCK_N, BLOCK_H], gl.float32, layout=O_L)  # row sums per key row, summed across warps once
    acc = gl.zeros([D_NOPE, BLOCK_H], gl.float32, layout=O_L)
    # tile 0: S^T and V^T's operand
    slot = _slots(idx_row, 0, n_tiles, KEYS)
    mbarrier.wait(ready.index(0), 0)
    fence_async_shared()
    s2 = _st_issue(kn8, kr8, qn8, qr8, 0, 0 * zero, S2_L, ROPE)
    a = _vt_operand(k32.index(0 * zero), DOT_A, False)
    s2 = warpgroup_mma_wait(0, deps=[s2])
    _barrier()
    mbarrier.arrive(free.index(0))
    for j in range(n_tiles - 1):
        z = j * zero
        sn = (j + 1) % NST  # the next tile's stage
        slot_nx = _slots(idx_row, j + 1, n_tiles, KEYS)
        m_i, l_k, acc = _softmax_pv(s2, slot, num_slots, s_scale, m_i, l_k, acc, a, p8, z, O_L)
        mbarrier.wait(ready.index(sn), ((j + 1) // NST) & 1)
        fence_async_shared()
        s2 = _st_issue(kn8, kr8, qn8, qr8, sn, z, S2_L, ROPE)
        acc = warpgroup_mma_wait(ST_GROUPS, deps=[acc])  # P.V of tile j done (S^T of j + 1 may run on)
        a = _vt_operand(k32.index(z + sn), DOT_A, False)
        s2 = warpgroup_mma_wait(0, deps=[s2])
        _barrier()  # every warp's S^T and loads are done with the stage; P's buffer free
        mbarrier.arrive(free.index(sn))
        slot = slot_nx
    m_i, l_k, acc = _softmax_pv(s2, slot, num_slots, s_scale, m_i, l_k, acc, a, p8, 0 * zero, O_L)
    acc = warpgroup_mma_wait(0, deps=[acc])
    _write_out_rows(acc, l_k, m_i, out, t, stride_ot, stride_oh, out_scale, BLOCK_H, out, 0, out, O_L, False)


@gluon.jit
def proto_fp8_rega(q, stride_qt, stride_qh, kv, stride_row, num_slots, idx, stride_it, out, stride_ot, stride_oh,
                   score_scale, out_scale, zero, num_heads, lse, stride_lt, sink, topk_len, TOPK: gl.constexpr,
                   DIAG: gl.constexpr = 0, ROPE: gl.constexpr = True, NST: gl.constexpr = 2,
                   VT_SMEM: gl.constexpr = False, PIPE: gl.constexpr = False, ONE_BAR: gl.constexpr = 0,
                   HAS_LSE: gl.constexpr = False, HAS_SINK: gl.constexpr = False, HAS_TOPK_LEN: gl.constexpr = False):
    """One program a token: its first num_heads (<= 16) heads; LSE, a per-head sink and topk_len (keys past it
    masked, tiles past it skipped) as the HAS_ flags say (not with PIPE)."""
    t = gl.program_id(0).to(gl.int64)
    gl.static_assert(not (PIPE and (HAS_LSE or HAS_SINK or HAS_TOPK_LEN)), "PIPE: no LSE, sink or topk_len")
    kn8 = gl.allocate_shared_memory(gl.float8e4nv, [NST, BLOCK_N, D_NOPE], SW128)
    kr8 = gl.allocate_shared_memory(gl.float8e4nv, [NST, BLOCK_N, D_ROPE], SW64)
    qn8 = gl.allocate_shared_memory(gl.float8e4nv, [1, 2 * BLOCK_H, D_NOPE], SW128)
    qr8 = gl.allocate_shared_memory(gl.float8e4nv, [1, 2 * BLOCK_H, D_ROPE], SW64)
    p8 = gl.allocate_shared_memory(gl.float8e4nv, [2, BLOCK_H, BLOCK_N], SW64)
    k32 = _reinterpret(kn8, gl.int32, [NST, BLOCK_N, D_NOPE // 4], SW128_32)
    # VT_SMEM: each stage's K bytes as V^T [512, 64] (64-byte swizzle): words for M's stores, e4m3 for P.V
    vt32 = _reinterpret(kn8, gl.int32, [NST, D_NOPE, BLOCK_N // 4], SW64_32)
    vt_0 = _reinterpret(kn8.index(0), gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64)
    vt_1 = _reinterpret(kn8.index(1), gl.float8e4nv, [1, D_NOPE, BLOCK_N], SW64)
    gl.static_assert(NST == 2 or not VT_SMEM, "VT_SMEM: two stages")
    # ONE_BAR: the max's partials, P's halves in buffers of their own
    red = gl.allocate_shared_memory(gl.float32, [4, BLOCK_H], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    flags = gl.allocate_shared_memory(gl.int32, [4, 32], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    p_hi8 = gl.allocate_shared_memory(gl.float8e4nv, [1, BLOCK_H, BLOCK_N], SW64)
    p_lo8 = gl.allocate_shared_memory(gl.float8e4nv, [1, BLOCK_H, BLOCK_N], SW64)
    # (ready and free as two allocations: tried for the barrier before M's arrive, which stayed; harmless)
    ready = gl.allocate_shared_memory(gl.int64, [NST, 1], mbarrier.MBarrierLayout())
    free = gl.allocate_shared_memory(gl.int64, [NST, 1], mbarrier.MBarrierLayout())
    for b in gl.static_range(NST):
        mbarrier.init(ready.index(b), count=128)
        mbarrier.init(free.index(b), count=1)
    idx_row = idx + t * stride_it
    if HAS_TOPK_LEN:
        tlen = gl.minimum(gl.maximum(gl.load(topk_len + t), 0), TOPK)
    else:
        tlen = TOPK
    n_tiles = gl.cdiv(tlen, BLOCK_N)
    if PIPE:
        gl.warp_specialize([
            (_group_m_pipe, (q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, k32, qn8, qr8, p8, ready, free,
                             out, stride_ot, stride_oh, score_scale, out_scale, n_tiles, zero, ROPE, NST)),
            (_group_g, (kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, ready, free, NST, ROPE)),
        ], [4], [GATHER_REGS])
    else:
        gl.warp_specialize([
            (_group_m, (q, stride_qt, stride_qh, t, num_slots, idx_row, kn8, kr8, k32, vt32, vt_0, vt_1, qn8, qr8, p8,
                        ready, free, out, stride_ot, stride_oh, score_scale, out_scale, n_tiles, zero, red, flags,
                        p_hi8, p_lo8, num_heads, lse, stride_lt, sink, tlen, HAS_LSE, HAS_SINK, DIAG, ROPE, NST,
                        VT_SMEM, ONE_BAR)),
            (_group_g, (kv, stride_row, num_slots, idx_row, n_tiles, kn8, kr8, ready, free, NST, ROPE, tlen,
                        HAS_TOPK_LEN)),
        ], [4], [GATHER_REGS])


# The kernels checked and timed: name -> (NST, VT_SMEM, PIPE, ONE_BAR, DIAG). Session 42 (an H100, T=256 H=16 fp8,
# the suite's pool / L2; benchmarks/results/session42/): call 2, A from registers two stages 124.8 / 107.2 us, three
# 136.7 / 129.2, no byte permutes (DIAG 1) 123.7 / 109.3 (proto_fp8_raw 123.9 / 118.3, shipped 142.8 / 117.2); call 3
# (L2) no P.V 81.4, no V loads 110.3, stage freed after P.V 108.9; call 4, VT_SMEM 135.9 / 130.1; call 5, PIPE two
# stages 132.6 / 128.7, three 150.8 / 152.0; call 7, ONE_BAR 1 126.2 / 101.7 (2: 125.9 / 102.6; ONE_BAR 0 126.4 /
# 105.8); call 9, ONE_BAR 3 (lazy max) 123.0 / 102.6 (1: 123.5 / 103.0); call 10, ONE_BAR 1 with DIAG 32 (KPERM, P
# stored as 16-bit pairs) 126.5 / 93.6 (ONE_BAR 1 127.2 / 101.7), with DIAG 16 (V^T's loads first) 126.3 / 101.2.
KERNELS = {"V^T in registers, two stages": (2, False, False, 0, 0),
           "V^T in registers, one-barrier max, two stages": (2, False, False, 1, 0),
           "one-barrier max, P in 16-bit pairs": (2, False, False, 1, 32)}
DIAGS = {2: "no P.V (wrong)"}


def launch(q, cache_u8, idx, out, sm_scale, kv_scale, nst=2, diag=0, vt_smem=False, pipe=False, one_bar=0, lse=None,
           sink=None, topk_len=None):
    """out [T, H, 512] for q [T, H <= 16, d_qk]; lse [T, H] float32, sink [H] float32, topk_len [T] int32 optional."""
    proto_fp8_rega[(q.shape[0],)](q, q.stride(0), q.stride(1), cache_u8, cache_u8.stride(0), cache_u8.shape[0], idx,
                                  idx.stride(0), out, out.stride(0), out.stride(1),
                                  sm_scale * kv_scale * 1.4426950408889634, kv_scale, 0, q.shape[1],
                                  out if lse is None else lse, 0 if lse is None else lse.stride(0),
                                  out if sink is None else sink, idx if topk_len is None else topk_len,
                                  TOPK=idx.shape[1], DIAG=diag, ROPE=q.shape[-1] > D_NOPE, NST=nst, VT_SMEM=vt_smem,
                                  PIPE=pipe, ONE_BAR=one_bar, HAS_LSE=lse is not None, HAS_SINK=sink is not None,
                                  HAS_TOPK_LEN=topk_len is not None, num_warps=4, maxnreg=128)


def compile_only() -> int:
    """Compile the kernel for sm_90a and print its resources (no GPU)."""
    import re
    from triton.backends.compiler import GPUTarget
    from sparsemla.gen.compile_check import _ptxas_resources
    sig = {"q": "*bf16", "stride_qt": "i32", "stride_qh": "i32", "kv": "*u8", "stride_row": "i32",
           "num_slots": "i32", "idx": "*i32", "stride_it": "i32", "out": "*bf16", "stride_ot": "i32",
           "stride_oh": "i32", "score_scale": "fp32", "out_scale": "fp32", "zero": "i32", "num_heads": "i32",
           "lse": "*fp32", "stride_lt": "i32", "sink": "*fp32", "topk_len": "*i32", "TOPK": "constexpr",
           "DIAG": "constexpr", "ROPE": "constexpr", "NST": "constexpr", "VT_SMEM": "constexpr",
           "PIPE": "constexpr", "ONE_BAR": "constexpr", "HAS_LSE": "constexpr", "HAS_SINK": "constexpr",
           "HAS_TOPK_LEN": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)}
    for nst, rope, diag, vt_smem, pipe, one_bar, feats in (
            (2, True, 0, False, False, 0, False), (2, True, 0, False, False, 1, False),
            (2, True, 32, False, False, 1, True), (2, False, 32, False, False, 1, True),
            (2, True, 0, True, False, 0, False), (2, True, 0, False, True, 0, False)):
        consts = {"TOPK": 2048, "DIAG": diag, "ROPE": rope, "NST": nst, "VT_SMEM": vt_smem, "PIPE": pipe,
                  "ONE_BAR": one_bar, "HAS_LSE": feats, "HAS_SINK": feats, "HAS_TOPK_LEN": feats}
        k = triton.compile(gluon._runtime.GluonASTSource(proto_fp8_rega, sig, consts, attrs=attrs),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "maxnreg": 128})
        ptx = k.asm["ptx"]
        regs = sorted(set(re.findall(r"setmaxnreg[.a-z0-9]*\s+([0-9]+)", ptx)))
        print(f"Triton {triton.__version__} proto_fp8_rega NST {nst} ROPE {rope} DIAG {diag} VT_SMEM {vt_smem} "
              f"PIPE {pipe} ONE_BAR {one_bar} LSE/sink/topk_len {feats}: smem "
              f"{k.metadata.shared} B; wgmma {len(re.findall(r'wgmma.mma_async', ptx))}; cp.async "
              f"{len(re.findall(r'cp.async.cg', ptx))}; ld.shared.v4 {len(re.findall(r'ld.shared.v4', ptx))}; "
              f"st.shared {len(re.findall(r'st.shared', ptx))}; prmt {len(re.findall(r'prmt', ptx))}; setmaxnreg "
              f"{regs}; regs / spill: {_ptxas_resources(ptx, 'sm90')}")
    for vt_smem in (False, True):
        k = triton.compile(gluon._runtime.GluonASTSource(check_pv_regs, {"k_ptr": "*u8", "p_ptr": "*u8",
                                                                         "o_ptr": "*bf16", "VT_SMEM": "constexpr"},
                                                         {"VT_SMEM": vt_smem}),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        ptx = k.asm["ptx"]
        print(f"Triton {triton.__version__} check_pv_regs VT_SMEM {vt_smem}: smem {k.metadata.shared} B; st.shared.v4 "
              f"{len(re.findall(r'st.shared.v4', ptx))}; ld.shared.v4 {len(re.findall(r'ld.shared.v4', ptx))}")
    return 0


def check_features(launch_fn, fmt, cache, kw, dev, T=128, topk=2048) -> bool:
    """launch_fn(q, u8, idx, out, lse, sink, topk_len) against the PyTorch reference with LSE, a per-head sink (one
    head +inf, one -inf), topk_length (0, 2048, and lengths inside a tile) and 16 or 8 heads; every slot the lists
    do not reach (within topk_length) holds NaN, and the ids past topk_length point anywhere, NaN slots included."""
    import sparsemla
    from sparsemla.gen.suite import SLOTS
    ok_all = True
    for H in (16, 8):
        g = torch.Generator(device=dev).manual_seed(40 + H)
        idx = torch.randint(0, SLOTS, (T, topk), device=dev, generator=g, dtype=torch.int32)
        idx[idx % 5 == 0] = -1
        tlen = torch.randint(0, topk + 1, (T,), device=dev, generator=g, dtype=torch.int32)
        tlen[:3] = torch.tensor([0, topk, 77], device=dev, dtype=torch.int32)
        tlen[3:8] = torch.randint(1, 64, (5,), device=dev, generator=g, dtype=torch.int32)
        reached = torch.zeros(SLOTS, dtype=torch.bool, device=dev)
        within = torch.arange(topk, device=dev)[None, :] < tlen[:, None].long()
        reached[idx[within & (idx >= 0)].long()] = True
        nan_cache = cache.clone()
        nan_cache.view(torch.uint8)[~reached] = 0x7F  # e4m3 NaN
        q = torch.randn(T, H, fmt.d_qk, device=dev, generator=g).bfloat16()
        sink = torch.randn(H, device=dev, generator=g) * 2
        sink[0], sink[1] = float("inf"), float("-inf")
        ref, ref_lse = sparsemla.sparse_mla(q, nan_cache, idx, sm_scale=fmt.d_qk ** -0.5, kv_format="fp8_e4m3",
                                            backend="torch", topk_length=tlen, attn_sink=sink, return_lse=True, **kw)
        out = torch.full((T, H, 512), float("nan"), device=dev, dtype=torch.bfloat16)
        lse = torch.full((T, H), float("nan"), device=dev)
        launch_fn(q, nan_cache.view(torch.uint8), idx, out, lse, sink, tlen)
        good, verdict = check_out(out, ref, 0)  # (token 0 has topk_length 0: all zero)
        fin = torch.isfinite(ref_lse)
        lse_ok = bool(torch.equal(fin, torch.isfinite(lse))) and bool((lse[~fin] == float("inf")).all())
        lse_err = float(((lse[fin] - ref_lse[fin]).abs() / ref_lse[fin].abs().clamp_min(1)).max()) if fin.any() else 0
        good = good and lse_ok and lse_err < 5e-3
        ok_all &= good
        print(f"features, H={H}: {verdict}; LSE +inf where the reference's {lse_ok}, rel err {lse_err:.2e} -> "
              f"{'ok' if good else 'FAIL'}", flush=True)
    return ok_all


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--format", default="fp8", choices=["fp8", "fp8_nope"], help="the suite's fp8_e4m3 formats")
    ap.add_argument("--l2-slots", type=int, default=16384, help="the L2-resident pool timed after the suite's")
    ap.add_argument("--plain-only", action="store_true", help="one plain launch only (e.g. under compute-sanitizer)")
    ap.add_argument("--vt-smem", action="store_true", help="with --plain-only: V^T stored over K")
    ap.add_argument("--pipe", action="store_true", help="with --plain-only: P.V left in flight (PIPE)")
    ap.add_argument("--one-bar", type=int, default=0, help="with --plain-only: ONE_BAR (1, 2 or 3)")
    ap.add_argument("--diag", type=int, default=0, help="with --plain-only: DIAG bits")
    ap.add_argument("--plain-slots", type=int, default=0, help="with --plain-only: the slot pool (0: the suite's)")
    args = ap.parse_args()
    if args.compile:
        return compile_only()
    from sparsemla.bench import FORMATS, make_cache
    from sparsemla.gen.suite import SLOTS
    dev = torch.device("cuda")
    T, H, topk = args.tokens, 16, 2048
    fmt = FORMATS[args.format]
    cache, kw = make_cache(fmt, dev)
    u8 = cache.view(torch.uint8)
    sm_scale = fmt.d_qk ** -0.5
    if args.plain_only:
        idx = torch.randint(0, args.plain_slots or SLOTS, (T, topk), device=dev, dtype=torch.int32)
        q = torch.randn(T, H, fmt.d_qk, device=dev).bfloat16()
        out = torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)
        launch(q, u8, idx, out, sm_scale, kw["kv_scale"], vt_smem=args.vt_smem, pipe=args.pipe, diag=args.diag,
               one_bar=args.one_bar)
        torch.cuda.synchronize()
        print(f"plain launch: output finite {bool(torch.isfinite(out.float()).all())}")
        return 0
    k8 = (torch.randn(BLOCK_N, D_NOPE, device=dev) * 4).to(torch.float8_e4m3fn)
    p8 = torch.rand(BLOCK_H, BLOCK_N, device=dev).to(torch.float8_e4m3fn)
    o = torch.empty(BLOCK_H, D_NOPE, device=dev, dtype=torch.bfloat16)
    o_ref = p8.float() @ k8.float()
    ok = True
    for vt_smem in (False, True):
        check_pv_regs[(1,)](k8.view(torch.uint8), p8.view(torch.uint8), o, VT_SMEM=vt_smem, num_warps=4)
        unit_err = ((o.float() - o_ref).norm() / o_ref.norm()).item()
        ok &= unit_err < 1e-2
        print(f"unit: V^T P^T, V^T {'stored over K' if vt_smem else 'as A from registers'}: rel err {unit_err:.2e} -> "
              f"{'ok' if unit_err < 1e-2 else 'FAIL'}", flush=True)
    kernels = {name: (lambda q, idx, out, nst=nst, vt_smem=vt_smem, pipe=pipe, one_bar=one_bar, diag=diag: launch(
        q, u8, idx, out, sm_scale, kw["kv_scale"], nst=nst, vt_smem=vt_smem, pipe=pipe, one_bar=one_bar, diag=diag))
        for name, (nst, vt_smem, pipe, one_bar, diag) in KERNELS.items()}
    ok &= check_kernels(kernels, fmt, cache, kw, T, H, topk, dev)
    ok &= check_features(lambda q, u8_, idx, out, lse, sink, tlen: launch(
        q, u8_, idx, out, sm_scale, kw["kv_scale"], one_bar=1, diag=32, lse=lse, sink=sink, topk_len=tlen),
        fmt, cache, kw, dev)
    lse = torch.empty(T, H, device=dev)
    sink = torch.randn(H, device=dev)
    tlen = torch.full((T,), topk, device=dev, dtype=torch.int32)
    kernels["one-barrier max, P in 16-bit pairs, with LSE, sink, topk_len"] = lambda q, idx, out: launch(
        q, u8, idx, out, sm_scale, kw["kv_scale"], one_bar=1, diag=32, lse=lse, sink=sink, topk_len=tlen)
    for diag, what in DIAGS.items():
        kernels[f"V^T in registers, {what}"] = lambda q, idx, out, diag=diag: launch(
            q, u8, idx, out, sm_scale, kw["kv_scale"], diag=diag)
    kernels["raw e4m3, V^T in place (session 41)"] = lambda q, idx, out: proto_fp8_raw.launch(
        q, u8, idx, out, sm_scale, kw["kv_scale"])
    time_kernels(kernels, fmt, cache, kw, args.format, T, H, topk, (SLOTS, args.l2_slots), dev)
    print("correctness:", "ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
