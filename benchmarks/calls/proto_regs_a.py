"""Issue 7, the fp8 T=256 H=16 rows (session 28 prototype): the narrow kernel with wgmma's A operand in registers.

Why: the shipped narrow kernel (templates/sparse_mla_gluon.py.jinja) runs fp8 caches at the tile rate of bf16 ones
(~3.4K cycles a 64-key tile per SM), so they reach only 0.46-0.55 of the copy ceiling on their half-size bytes.
Its loading group dequantizes each tile into a 72 KB bf16 stage in shared memory, and wgmma reads the stage twice as
its A operand (S^T = K Q^T and O^T = V^T P^T): ~228 KB of shared-memory traffic a tile, beside the other program's.
Session 27's timeline showed S's wgmma and the softmax 2-3x slower with fp8 than with bf16 (shared-memory
contention). Here the computing warp group loads the tile's e4m3 bytes itself, dequantizes them in registers and
feeds them to wgmma as its register operand A; only Q^T (18 KB, once) and P^T (2 KB a tile) live in shared memory.

Layouts: a thread's A-operand elements are not contiguous in the row (pairs of columns 8 apart), so each operand's
columns (S^T: the 576 score dims; O^T: the 512 output dims) are a bit permutation of the row's bytes chosen so that
every thread loads 16 contiguous bytes (perm_k, perm_d below), and a reshape/permute turns the loaded tensor into the
dot-operand layout without moving data (convert_layout(..., assert_trivial=True) proves it at compile time). Q's
columns are stored permuted the same way; the output's rows are un-permuted when stored. The V^T operand is a second
read of the same rows in the O^T distribution (from L1/L2 in proto_fwd, from the cp.async stage in proto_staged).

Scope of the prototype: fp8_e4m3 (one per-tensor scale, folded into the score scale and the output), d_qk 576,
16 heads, one split (T=256 fills the H200 at two programs an SM), no sink, no LSE, no topk_length.

Outcome (H200, session 28 calls 1-4; benchmarks/results/session28/README.md): correct in every variant (rel err
1.9e-3 with bf16 operands, 6.7e-4 with fp16), but slower than the shipped kernel in all of them (best: staged by
cp.async, fp16 operands, 161.0 us against 130.7): one warp group's serial chain a tile bounds it. Not adopted.

  python3 benchmarks/calls/proto_regs_a.py           (GPU: correctness, then timing beside the shipped kernel)
  python3 benchmarks/calls/proto_regs_a.py --compile (CPU: compile for sm_90a, print registers / spills / smem)
"""
import argparse
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    async_copy, fence_async_shared, warpgroup_mma, warpgroup_mma_wait)

_barrier = getattr(gl, "barrier", None) or gl.thread_barrier
_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared

BLOCK_N = 64
D_NOPE = 512
D_ROPE = 64


def perm_k(k):
    """S^T's column k (the dot operand's K index) -> the row's byte: a thread's 4 register bits of K (k0, k3, k4,
    k5) become the byte's low 4 bits, its lane bits (k1, k2) bits 4 and 5."""
    return (k & 1) | (((k >> 1) & 3) << 4) | (((k >> 3) & 7) << 1) | (k & ~63)


def perm_d(m):
    """Row m of an O^T quarter (the dot operand's M index, 0..127) -> the dim within the quarter: m3, m6
    (registers) become the dim's low 2 bits, m0..m2 (lanes) bits 2-4, m4 and m5 (warps) bits 5 and 6."""
    return ((m >> 3) & 1) | (((m >> 6) & 1) << 1) | ((m & 7) << 2) | (((m >> 4) & 3) << 5)


@gluon.jit
def _dequant(x, CT: gl.constexpr):
    """e4m3 bytes -> CT: fp16 in one cvt per pair (exact: e4m3 lies in fp16's range), bf16 through float32."""
    x = x.to(gl.float8e4nv, bitcast=True)
    if CT.primitive_bitwidth == 16 and CT.is_fp16():
        y = x.to(gl.float16)
    else:
        y = x.to(gl.float32).to(gl.bfloat16)
    return y


@gluon.jit
def _s_operand(x, W: gl.constexpr, A_L: gl.constexpr, CT: gl.constexpr):
    """e4m3 bytes x [64, W] (row bytes in load order) -> the bf16 A operand [64, W] of S^T (columns in perm_k
    order), without moving data."""
    x = _dequant(x, CT)
    y = gl.reshape(x, [BLOCK_N_C, W // 64, 4, 8, 2])  # (key, b, c, i3..i1, i0)
    y = gl.permute(y, (0, 1, 3, 2, 4))  # (key, b, i3..i1, c, i0): K = 64 b + 8 i + 2 c + i0
    return gl.convert_layout(gl.reshape(y, [BLOCK_N_C, W]), A_L, assert_trivial=True)


@gluon.jit
def _v_operand(x, A_L: gl.constexpr, CT: gl.constexpr):
    """e4m3 bytes x [128, 64] (a quarter of the output dims in load order, keys) -> the bf16 A operand [128, 64]
    of O^T (rows in perm_d order), without moving data."""
    x = _dequant(x, CT)
    y = gl.reshape(x, [4, 8, 2, 2, BLOCK_N_C])  # (w: d6 d5, g: d4..d2, d1, d0)
    y = gl.permute(y, (2, 0, 3, 1, 4))  # (m6, w, m3, g): M = 64 m6 + 16 w + 8 m3 + g
    return gl.convert_layout(gl.reshape(y, [128, BLOCK_N_C]), A_L, assert_trivial=True)


BLOCK_N_C = gl.constexpr(BLOCK_N)
D_NOPE_C = gl.constexpr(D_NOPE)
D_ROPE_C = gl.constexpr(D_ROPE)


@gluon.jit
def _prefetch_l2(ptrs):
    gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [ptrs], dtype=gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def _perm_k(k):
    return (k & 1) | (((k >> 1) & 3) << 4) | (((k >> 3) & 7) << 1) | (k & ~63)


@gluon.jit
def _perm_d(m):
    return ((m >> 3) & 1) | (((m >> 6) & 1) << 1) | ((m & 7) << 2) | (((m >> 4) & 3) << 5)


# Load layouts: the dot operand's, with a thread's register bits of K (S^T) or M (O^T) as the low bits of the address,
# in order, so each thread's 16 (S^T) or 4 (a quarter of O^T) bytes of a row are contiguous.
XS_L = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [8, 0], [0, 64]],
    lane_bases=[[0, 16], [0, 32], [1, 0], [2, 0], [4, 0]], warp_bases=[[16, 0], [32, 0]], block_bases=[],
    shape=[64, 128]))
XR_L = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [0, 2], [0, 4], [0, 8], [8, 0]],
    lane_bases=[[0, 16], [0, 32], [1, 0], [2, 0], [4, 0]], warp_bases=[[16, 0], [32, 0]], block_bases=[],
    shape=[64, 64]))
XV_L = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[1, 0], [2, 0], [0, 1], [0, 8], [0, 16], [0, 32]],
    lane_bases=[[0, 2], [0, 4], [4, 0], [8, 0], [16, 0]], warp_bases=[[32, 0], [64, 0]], block_bases=[],
    shape=[128, 64]))
# V16: V^T's 512 dims loaded at once, 16 contiguous bytes a thread (4 register bits of the dim), then split into the
# quarters along two of those bits (free: a split within registers): a quarter's dims are (dl & 3) | q << 2 |
# (dl >> 2) << 4 for its load-order dim dl.
XW_L = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[1, 0], [2, 0], [4, 0], [8, 0], [0, 1], [0, 8], [0, 16], [0, 32]],
    lane_bases=[[0, 2], [0, 4], [16, 0], [32, 0], [64, 0]], warp_bases=[[128, 0], [256, 0]], block_bases=[],
    shape=[512, 64]))


@gluon.jit
def _load_q_t(q, stride_qt, stride_qh, t, qn, qr, score_scale, BLOCK_H: gl.constexpr, F16: gl.constexpr,
              CT: gl.constexpr):
    """Q^T into shared memory, its columns in perm_k order (Q is read once); with F16 scaled by a power of two into
    fp16's range (its largest |value| to [2^14, 2^15)). Returns the score scale with that scale undone."""
    GQ: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    heads = gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GQ))
    q_row = q + t * stride_qt + heads.to(gl.int64)[:, None] * stride_qh
    k = gl.arange(0, D_NOPE_C, layout=gl.SliceLayout(0, GQ))
    qv = gl.load(q_row + _perm_k(k)[None, :]).to(gl.float32)
    kr = gl.arange(0, D_ROPE_C, layout=gl.SliceLayout(0, GQ))
    qrv = gl.load(q_row + D_NOPE_C + _perm_k(kr)[None, :]).to(gl.float32)
    if F16:
        q_max = gl.maximum(gl.max(gl.max(gl.abs(qv), axis=1), axis=0), gl.max(gl.max(gl.abs(qrv), axis=1), axis=0))
        q_scale = gl.where(q_max > 0, gl.exp2(14.0 - gl.floor(gl.log2(q_max))), 1.0)
        qv = qv * q_scale
        qrv = qrv * q_scale
        score_scale = score_scale / q_scale
    qn.store(qv.to(CT))
    qr.store(qrv.to(CT))
    fence_async_shared()
    return score_scale


@gluon.jit
def _online_softmax(s, m_i, l_i):
    """One tile's masked scores s [keys, heads] -> (P, the running output's rescale, the new max, the new sum)."""
    m_new = gl.maximum(m_i, gl.max(s, axis=0))
    m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = gl.exp2(m_i - m_use)
    p = gl.exp2(s - m_use[None, :])
    return p, alpha, m_new, l_i * alpha + gl.sum(p, axis=0)


@gluon.jit
def _quarters(vw):
    """V^T's 512 dims as loaded in XW_L -> its four quarters [128, keys] (splits within registers)."""
    vw = gl.permute(gl.reshape(vw, [32, 2, 2, 4, BLOCK_N_C]), (0, 3, 4, 1, 2))  # (d8..d4, d1 d0, key, d3, d2)
    va, vb = gl.split(vw)  # d2 = 0, 1
    v0, v2 = gl.split(va)  # d3 = 0, 1
    v1, v3 = gl.split(vb)
    return (gl.reshape(v0, [128, BLOCK_N_C]), gl.reshape(v1, [128, BLOCK_N_C]), gl.reshape(v2, [128, BLOCK_N_C]),
            gl.reshape(v3, [128, BLOCK_N_C]))


@gluon.jit
def _pv(v0, v1, v2, v3, pt, acc0, acc1, acc2, acc3, alpha, A_L: gl.constexpr, CT: gl.constexpr):
    """O^T += V^T P^T after rescaling by alpha, a quarter of the dims at a time, at most two wgmmas in flight."""
    acc0 = warpgroup_mma(_v_operand(v0, A_L, CT), pt, acc0 * alpha[None, :], is_async=True)
    acc1 = warpgroup_mma(_v_operand(v1, A_L, CT), pt, acc1 * alpha[None, :], is_async=True)
    acc0 = warpgroup_mma_wait(1, deps=[acc0])
    acc2 = warpgroup_mma(_v_operand(v2, A_L, CT), pt, acc2 * alpha[None, :], is_async=True)
    acc1 = warpgroup_mma_wait(1, deps=[acc1])
    acc3 = warpgroup_mma(_v_operand(v3, A_L, CT), pt, acc3 * alpha[None, :], is_async=True)
    acc2, acc3 = warpgroup_mma_wait(0, deps=[acc2, acc3])
    return acc0, acc1, acc2, acc3


@gluon.jit
def _store_out(out, stride_ot, stride_oh, t, acc0, acc1, acc2, acc3, l_i, out_scale, BLOCK_H: gl.constexpr,
               S_L: gl.constexpr, V16: gl.constexpr):
    """O = O^T / l (times the output scale) into out's rows, dims un-permuted; a row with nothing valid is 0."""
    inv = gl.where(l_i > 0, out_scale / l_i, 0.0)
    hs = gl.arange(0, BLOCK_H, layout=gl.SliceLayout(0, S_L))
    o_row = out + t * stride_ot + hs.to(gl.int64)[None, :] * stride_oh
    _store_quarter(o_row, acc0, inv, 0, gl.SliceLayout(1, S_L), V16)
    _store_quarter(o_row, acc1, inv, 1, gl.SliceLayout(1, S_L), V16)
    _store_quarter(o_row, acc2, inv, 2, gl.SliceLayout(1, S_L), V16)
    _store_quarter(o_row, acc3, inv, 3, gl.SliceLayout(1, S_L), V16)


@gluon.jit
def _store_quarter(o_row, acc, inv, Q: gl.constexpr, ROWS: gl.constexpr, V16: gl.constexpr):
    dl = _perm_d(gl.arange(0, 128, layout=ROWS))
    if V16:
        dim = (dl & 3) | (Q << 2) | ((dl >> 2) << 4)
    else:
        dim = Q * 128 + dl
    gl.store(o_row + dim[:, None], (acc * inv[None, :]).to(gl.bfloat16))


@gluon.jit
def proto_fwd(q, stride_qt, stride_qh, kv, stride_row, num_slots, idx, stride_it, out, stride_ot, stride_oh,
              score_scale, out_scale, TOPK: gl.constexpr, BLOCK_H: gl.constexpr, PREFETCH: gl.constexpr,
              F16: gl.constexpr, V16: gl.constexpr):
    t = gl.program_id(0).to(gl.int64)
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_H, 16])
    A_L: gl.constexpr = gl.DotOperandLayout(0, S_L, 2)
    KEYS: gl.constexpr = gl.SliceLayout(1, S_L)
    HEADS: gl.constexpr = gl.SliceLayout(0, S_L)

    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    # The operands' type: fp16 (F16) converts e4m3 in one instruction a pair; Q is scaled by a power of two
    # into fp16's range (its largest |value| to [2^14, 2^15)), undone in the score scale.
    CT: gl.constexpr = gl.float16 if F16 else gl.bfloat16
    qn = gl.allocate_shared_memory(CT, [BLOCK_H, D_NOPE_C], SW)
    qr = gl.allocate_shared_memory(CT, [BLOCK_H, D_ROPE_C], SW)
    pt = gl.allocate_shared_memory(CT, [BLOCK_N_C, BLOCK_H], gl.NVMMASharedLayout.get_default_for([BLOCK_N_C, BLOCK_H], CT))
    score_scale = _load_q_t(q, stride_qt, stride_qh, t, qn, qr, score_scale, BLOCK_H, F16, CT)
    _barrier()

    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=HEADS)
    l_i = gl.zeros([BLOCK_H], gl.float32, layout=HEADS)
    # O^T in quarters of 128 dims (rows in perm_d order), so one quarter's A operand is live at a time.
    acc0 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    acc1 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    acc2 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    acc3 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    idx_row = idx + t * stride_it
    cols_s = gl.arange(0, 128, layout=gl.SliceLayout(0, XS_L))
    cols_r = gl.arange(0, D_ROPE_C, layout=gl.SliceLayout(0, XR_L))
    dims_v = gl.arange(0, 128, layout=gl.SliceLayout(1, XV_L))
    dims_w = gl.arange(0, D_NOPE_C, layout=gl.SliceLayout(1, XW_L))
    keys = gl.arange(0, BLOCK_N_C, layout=gl.SliceLayout(1, XS_L))
    LP: gl.constexpr = gl.BlockedLayout([1, 1], [4, 8], [4, 1], [1, 0])  # L2 prefetch: a thread per 128-B line
    lines = gl.minimum(gl.arange(0, 8, layout=gl.SliceLayout(0, LP)) * 128, 575)  # (the row's last byte last)
    slot_nx = gl.load(idx_row + keys)
    slot_nx2 = gl.load(idx_row + BLOCK_N_C + keys, mask=BLOCK_N_C + keys < TOPK, other=-1)
    for j in range(TOPK // BLOCK_N_C):
        if PREFETCH:
            # Slot ids two tiles ahead; the next tile's rows into L2 now, so its loads wait on L2, not HBM.
            slot = slot_nx
            slot_nx = slot_nx2
            slot_nx2 = gl.load(idx_row + (j + 2) * BLOCK_N_C + keys, mask=(j + 2) * BLOCK_N_C + keys < TOPK, other=-1)
            ok_nx = (slot_nx >= 0) & (slot_nx < num_slots)
            row_nx = gl.convert_layout(gl.where(ok_nx, slot_nx, 0).to(gl.int64) * stride_row, gl.SliceLayout(1, LP))
            _prefetch_l2(kv + row_nx[:, None] + lines[None, :])
        else:
            slot = gl.load(idx_row + j * BLOCK_N_C + keys)
        ok = (slot >= 0) & (slot < num_slots)
        row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
        pk = kv + row[:, None] + cols_s[None, :]
        x0 = gl.load(pk, mask=ok[:, None], other=0)
        x1 = gl.load(pk + 128, mask=ok[:, None], other=0)
        x2 = gl.load(pk + 256, mask=ok[:, None], other=0)
        x3 = gl.load(pk + 384, mask=ok[:, None], other=0)
        row_r = gl.convert_layout(row, gl.SliceLayout(1, XR_L))
        ok_r = gl.convert_layout(ok, gl.SliceLayout(1, XR_L))
        xr = gl.load(kv + row_r[:, None] + D_NOPE_C + cols_r[None, :], mask=ok_r[:, None], other=0)
        # S^T = K Q^T in five wgmmas, at most two in flight (their A operands are the live registers).
        s = gl.zeros([BLOCK_N_C, BLOCK_H], gl.float32, layout=S_L)
        s = warpgroup_mma(_s_operand(x0, 128, A_L, CT), qn.slice(0, 128, dim=1).permute((1, 0)), s, use_acc=False,
                          is_async=True)
        s = warpgroup_mma(_s_operand(x1, 128, A_L, CT), qn.slice(128, 128, dim=1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
        s = warpgroup_mma(_s_operand(x2, 128, A_L, CT), qn.slice(256, 128, dim=1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
        s = warpgroup_mma(_s_operand(x3, 128, A_L, CT), qn.slice(384, 128, dim=1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
        s = warpgroup_mma(_s_operand(xr, 64, A_L, CT), qr.permute((1, 0)), s, is_async=True)
        # V^T's bytes (the same rows again, from L1/L2) while S's last wgmmas run.
        if V16:
            row_w = gl.convert_layout(row, gl.SliceLayout(0, XW_L))
            ok_w = gl.convert_layout(ok, gl.SliceLayout(0, XW_L))
            v0, v1, v2, v3 = _quarters(gl.load(kv + row_w[None, :] + dims_w[:, None], mask=ok_w[None, :], other=0))
        else:
            row_v = gl.convert_layout(row, gl.SliceLayout(0, XV_L))
            ok_v = gl.convert_layout(ok, gl.SliceLayout(0, XV_L))
            pv = kv + row_v[None, :] + dims_v[:, None]
            v0 = gl.load(pv, mask=ok_v[None, :], other=0)
            v1 = gl.load(pv + 128, mask=ok_v[None, :], other=0)
            v2 = gl.load(pv + 256, mask=ok_v[None, :], other=0)
            v3 = gl.load(pv + 384, mask=ok_v[None, :], other=0)
        s = warpgroup_mma_wait(0, deps=[s])
        ok_s = gl.convert_layout(ok, KEYS)
        s = gl.where(ok_s[:, None], s * score_scale, float("-inf"))
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i)
        pt.store(p.to(CT))
        fence_async_shared()
        _barrier()
        acc0, acc1, acc2, acc3 = _pv(v0, v1, v2, v3, pt, acc0, acc1, acc2, acc3, alpha, A_L, CT)
    _store_out(out, stride_ot, stride_oh, t, acc0, acc1, acc2, acc3, l_i, out_scale, BLOCK_H, S_L, V16)


@gluon.jit
def _gather(kv, idx_row, num_slots, stride_row, j, kn8, kr8, bias, TOPK: gl.constexpr, GC: gl.constexpr,
            BIAS_L: gl.constexpr):
    """cp.async tile j's e4m3 rows into a stage (invalid slots zero-filled), and its score mask into bias."""
    offs = j * BLOCK_N_C + gl.arange(0, BLOCK_N_C, layout=gl.SliceLayout(1, GC))
    slot = gl.load(idx_row + offs, mask=offs < TOPK, other=-1)
    ok = (slot >= 0) & (slot < num_slots)
    row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, GC))
    for c in gl.static_range(D_NOPE_C // 64):
        _cp_async(kn8.slice(c * 64, 64, dim=1), kv + row[:, None] + c * 64 + cols[None, :], mask=ok[:, None])
    _cp_async(kr8, kv + row[:, None] + D_NOPE_C + cols[None, :], mask=ok[:, None])
    bias.store(gl.convert_layout(gl.where(ok, 0.0, float("-inf")), BIAS_L))


@gluon.jit
def proto_staged(q, stride_qt, stride_qh, kv, stride_row, num_slots, idx, stride_it, out, stride_ot, stride_oh,
                 score_scale, out_scale, TOPK: gl.constexpr, BLOCK_H: gl.constexpr, STAGES: gl.constexpr,
                 F16: gl.constexpr, V16: gl.constexpr):
    """The prototype with the tile's e4m3 rows staged in shared memory by cp.async, STAGES - 1 tiles ahead (no
    registers hold them in flight), then read into the A operands: 36 KB written and ~70 KB read a tile."""
    t = gl.program_id(0).to(gl.int64)
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_H, 16])
    A_L: gl.constexpr = gl.DotOperandLayout(0, S_L, 2)
    KEYS: gl.constexpr = gl.SliceLayout(1, S_L)
    HEADS: gl.constexpr = gl.SliceLayout(0, S_L)
    GC: gl.constexpr = gl.BlockedLayout([1, 16], [16, 2], [4, 1], [1, 0])  # cp.async: 16 B a thread, 2 per row
    BIAS_L: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    CT: gl.constexpr = gl.float16 if F16 else gl.bfloat16

    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    PLAIN: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    PLAIN1: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    qn = gl.allocate_shared_memory(CT, [BLOCK_H, D_NOPE_C], SW)
    qr = gl.allocate_shared_memory(CT, [BLOCK_H, D_ROPE_C], SW)
    pt = gl.allocate_shared_memory(CT, [BLOCK_N_C, BLOCK_H], gl.NVMMASharedLayout.get_default_for([BLOCK_N_C, BLOCK_H], CT))
    kn8 = gl.allocate_shared_memory(gl.uint8, [STAGES, BLOCK_N_C, D_NOPE_C], PLAIN)
    kr8 = gl.allocate_shared_memory(gl.uint8, [STAGES, BLOCK_N_C, D_ROPE_C], PLAIN)
    bias = gl.allocate_shared_memory(gl.float32, [STAGES, BLOCK_N_C], PLAIN1)

    idx_row = idx + t * stride_it
    for first in gl.static_range(STAGES - 1):  # the first tiles' copies go out before Q is loaded
        _gather(kv, idx_row, num_slots, stride_row, first, kn8.index(first), kr8.index(first), bias.index(first),
                TOPK, GC, BIAS_L)
        async_copy.commit_group()

    score_scale = _load_q_t(q, stride_qt, stride_qh, t, qn, qr, score_scale, BLOCK_H, F16, CT)

    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=HEADS)
    l_i = gl.zeros([BLOCK_H], gl.float32, layout=HEADS)
    acc0 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    acc1 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    acc2 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    acc3 = gl.zeros([128, BLOCK_H], gl.float32, layout=S_L)
    for j in range(TOPK // BLOCK_N_C):
        _barrier()  # every thread is done with the stage the next copies overwrite (tile j - 1's)
        nx = j + STAGES - 1
        _gather(kv, idx_row, num_slots, stride_row, nx, kn8.index(nx % STAGES), kr8.index(nx % STAGES),
                bias.index(nx % STAGES), TOPK, GC, BIAS_L)
        async_copy.commit_group()
        async_copy.wait_group(STAGES - 1)  # this thread's copies of tile j
        _barrier()  # and every thread's
        stage = j % STAGES
        kst = kn8.index(stage)
        s = gl.zeros([BLOCK_N_C, BLOCK_H], gl.float32, layout=S_L)
        s = warpgroup_mma(_s_operand(kst.slice(0, 128, dim=1).load(XS_L), 128, A_L, CT),
                          qn.slice(0, 128, dim=1).permute((1, 0)), s, use_acc=False, is_async=True)
        s = warpgroup_mma(_s_operand(kst.slice(128, 128, dim=1).load(XS_L), 128, A_L, CT),
                          qn.slice(128, 128, dim=1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
        s = warpgroup_mma(_s_operand(kst.slice(256, 128, dim=1).load(XS_L), 128, A_L, CT),
                          qn.slice(256, 128, dim=1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
        s = warpgroup_mma(_s_operand(kst.slice(384, 128, dim=1).load(XS_L), 128, A_L, CT),
                          qn.slice(384, 128, dim=1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(1, deps=[s])
        s = warpgroup_mma(_s_operand(kr8.index(stage).load(XR_L), 64, A_L, CT), qr.permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(0, deps=[s])
        s = s * score_scale + bias.index(stage).load(KEYS)[:, None]
        p, alpha, m_i, l_i = _online_softmax(s, m_i, l_i)
        pt.store(p.to(CT))
        fence_async_shared()
        _barrier()
        if V16:
            v0, v1, v2, v3 = _quarters(kst.permute((1, 0)).load(XW_L))
        else:
            v0 = kst.slice(0, 128, dim=1).permute((1, 0)).load(XV_L)
            v1 = kst.slice(128, 128, dim=1).permute((1, 0)).load(XV_L)
            v2 = kst.slice(256, 128, dim=1).permute((1, 0)).load(XV_L)
            v3 = kst.slice(384, 128, dim=1).permute((1, 0)).load(XV_L)
        acc0, acc1, acc2, acc3 = _pv(v0, v1, v2, v3, pt, acc0, acc1, acc2, acc3, alpha, A_L, CT)
    async_copy.wait_group(0)
    _store_out(out, stride_ot, stride_oh, t, acc0, acc1, acc2, acc3, l_i, out_scale, BLOCK_H, S_L, V16)


def launch_staged(q, cache_u8, idx, out, sm_scale, kv_scale, stages=2, f16=True, v16=True):
    T, H, _ = q.shape
    proto_staged[(T,)](q, q.stride(0), q.stride(1), cache_u8, cache_u8.stride(0), cache_u8.shape[0], idx,
                       idx.stride(0), out, out.stride(0), out.stride(1), sm_scale * kv_scale * 1.4426950408889634,
                       kv_scale, TOPK=idx.shape[1], BLOCK_H=H, STAGES=stages, F16=f16, V16=v16, num_warps=4)


def launch(q, cache_u8, idx, out, sm_scale, kv_scale, prefetch=True, f16=False, v16=False):
    T, H, _ = q.shape
    proto_fwd[(T,)](q, q.stride(0), q.stride(1), cache_u8, cache_u8.stride(0), cache_u8.shape[0], idx, idx.stride(0),
                    out, out.stride(0), out.stride(1), sm_scale * kv_scale * 1.4426950408889634, kv_scale,
                    TOPK=idx.shape[1], BLOCK_H=H, PREFETCH=prefetch, F16=f16, V16=v16, num_warps=4)


def compile_only(f16: bool, v16: bool, stages: int = 0) -> int:
    """Compile one variant for sm_90a (stages 0: direct loads, proto_fwd; else proto_staged) and print its
    resources."""
    from triton.backends.compiler import GPUTarget
    sig = {"q": "*bf16", "stride_qt": "i32", "stride_qh": "i32", "kv": "*u8", "stride_row": "i32",
           "num_slots": "i32", "idx": "*i32", "stride_it": "i32", "out": "*bf16", "stride_ot": "i32",
           "stride_oh": "i32", "score_scale": "fp32", "out_scale": "fp32", "TOPK": "constexpr",
           "BLOCK_H": "constexpr", "F16": "constexpr", "V16": "constexpr"}
    consts = {"TOPK": 2048, "BLOCK_H": 16, "F16": f16, "V16": v16}
    if stages:
        fn, sig["STAGES"], consts["STAGES"] = proto_staged, "constexpr", stages
    else:
        fn, sig["PREFETCH"], consts["PREFETCH"] = proto_fwd, "constexpr", True
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)}
    k = triton.compile(gluon._runtime.GluonASTSource(fn, sig, consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    ptx = k.asm["ptx"]
    open(f"/tmp/proto_regs_a_{int(f16)}{int(v16)}{stages}.ptx", "w").write(ptx)
    open("/tmp/proto_regs_a.cubin", "wb").write(k.asm["cubin"])
    import re
    from sparsemla.gen.compile_check import _ptxas_resources
    print(f"f16={f16} v16={v16} stages={stages}: smem {k.metadata.shared} B; wgmma",
          len(re.findall(r"wgmma.mma_async", ptx)), "; ld.global", len(re.findall(r"ld.global", ptx)),
          "; cp.async", len(re.findall(r"cp.async.c", ptx)), "; ld.shared", len(re.findall(r"ld.shared", ptx)),
          "; regs / spill:", _ptxas_resources(ptx, "sm90"))
    return 0


# The variants timed (calls 2-3 of session 28: bf16 operands 199.9 us, fp16 172.2, fp16 with 16-byte V^T loads
# 192.2, the shipped kernel 131.8): direct loads in fp16, and the tile staged by cp.async.
VARIANTS = {
    "direct fp16": lambda *a: launch(*a, prefetch=True, f16=True),
    "staged2 fp16 v16": lambda *a: launch_staged(*a, stages=2, v16=True),
    "staged2 fp16 v4": lambda *a: launch_staged(*a, stages=2, v16=False),
    "staged3 fp16 v16": lambda *a: launch_staged(*a, stages=3, v16=True),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()
    if args.compile:
        return (compile_only(False, False) or compile_only(True, False) or compile_only(True, True, 2)
                or compile_only(True, False, 2) or compile_only(True, True, 3))
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
        q = torch.randn(T, H, 576, device=dev, generator=g).bfloat16()
        ref = sparsemla.sparse_mla(q, cache, idx, sm_scale=sm_scale, kv_format="fp8_e4m3", backend="torch", **kw)
        for name, run in VARIANTS.items():
            out = torch.full((T, H, 512), float("nan"), device=dev, dtype=torch.bfloat16)
            run(q, u8, idx, out, sm_scale, kw["kv_scale"])
            err = ((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)).item()
            finite = bool(torch.isfinite(out.float()).all())
            zero_row = float(out[3].float().abs().max()) if trial == 1 else 0.0
            good = finite and err < 8e-3 and zero_row == 0.0
            ok_all &= good
            print(f"trial {trial} {name}: rel err {err:.2e} finite {finite} all-invalid row max "
                  f"{zero_row} -> {'ok' if good else 'FAIL'}", flush=True)
    # Timing: rotating index sets so the rows exceed L2, CUDA-graph replay (pkg/bench.graph_time_us), in
    # rotated orders.
    sets = []
    for r in range(4):
        g = torch.Generator(device=dev).manual_seed(100 + r)
        idx = torch.randint(0, SLOTS, (T, topk), device=dev, generator=g, dtype=torch.int32)
        q = torch.randn(T, H, 576, device=dev, generator=g).bfloat16()
        sets.append((q, idx, torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)))
    variants = {name: [lambda s=s, run=run: run(s[0], u8, s[1], s[2], sm_scale, kw["kv_scale"]) for s in sets]
                for name, run in VARIANTS.items()}
    variants["shipped"] = [lambda s=s: sparsemla.sparse_mla(s[0], cache, s[1], sm_scale=sm_scale,
                                                            kv_format="fp8_e4m3", out=s[2], **kw) for s in sets]
    names = list(variants)
    times = {n: [] for n in names}
    for rep in range(len(names)):
        for n in names[rep:] + names[:rep]:
            times[n].append(graph_time_us(variants[n]))
    nbytes = T * topk * 576
    copy_gbs = copy_ceiling_gbs(dev)
    print(f"| variant | us (median of {len(names)}) | GB/s | of copy ceiling ({copy_gbs:.0f} GB/s) |\n|---|---|---|---|")
    for n in names:
        us = sorted(times[n])[len(names) // 2]
        print(f"| {n} fp8 T={T} H={H} | {us:.1f} | {nbytes / us / 1e3:.0f} | {nbytes / us / 1e3 / copy_gbs:.2f} |")
    print("correctness:", "ok" if ok_all else "FAIL")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
