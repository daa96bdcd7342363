"""Issue 7 prototype (session 12): the bf16 sparse-MLA sm90 kernel with FlashInfer's division of
the work between two warp groups (its mla_hopper kernel, as read in session 12), in Gluon.

  warp group A (the worker partition): gathers tile j+1 by cp.async while B computes tile j, then
    O[:, 0:256] += P(j) V(j)[:, 0:256], after rescaling by B's alpha(j);
  warp group B (the default partition): S = Q K(j)^T whole (64 x 64 x 576: one wgmma chain with
    N = 64, so no second read of Q per column half and no reduction across warp groups), the
    online softmax, P(j) and alpha(j) into shared memory, then O[:, 256:512] += P(j) V(j)[:, 256:].
mbarriers: ready[s] (A's cp.asyncs landed, one arrive per A thread), p_ready[s] (B wrote P and
alpha), free[s] (B is done with the stage; A knows its own PV is done), md (B's final m and l).
P goes over the stage's rope columns (dead once S is done), alpha next to it: Q 72 KB + 2 x 72 KB.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    async_copy, fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

# (These four helpers lived in gluon_kernel.py, session 12's first prototype, removed in session 13.)
# The cp.async gather: Triton 3.6 names it async_copy_global_to_shared, later versions async_load.
_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
# The CTA-wide barrier: gl.thread_barrier in Triton 3.6, gl.barrier later.
_cta_barrier = getattr(gl, "barrier", None) or gl.thread_barrier


@gluon.jit
def _load_slots(idx_row, lo_tile, hi, BLOCK_N: gl.constexpr, L: gl.constexpr):
    """The slot ids of the tile at list position lo_tile (-1 past hi), as rows of layout L."""
    offs = lo_tile + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, L))
    return gl.load(idx_row + offs, mask=offs < hi, other=-1)


@gluon.jit
def _clock(x):
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [x], dtype=gl.int64, is_pure=False, pack=1)


BH = gl.constexpr(64)
BN = gl.constexpr(64)
D_NOPE = gl.constexpr(512)
D_ROPE = gl.constexpr(64)
NS = gl.constexpr(2)


@gluon.jit
def _gather_whole(kv, stride_row, num_slots, idx_row, lo_tile, hi, kn_buf, kr_buf):
    """One cp.async op per buffer (no column slices, which made the compiler put a barrier
    between the slices' copies): a warp covers a row's 512 columns, 16 rows a thread."""
    GN: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [4, 1], [1, 0])
    GR: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    slot = _load_slots(idx_row, lo_tile, hi, BN, GN)
    ok = (slot >= 0) & (slot < num_slots)
    row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
    cols = gl.arange(0, D_NOPE, layout=gl.SliceLayout(0, GN))
    _cp_async(kn_buf, kv + row[:, None] + cols[None, :], mask=ok[:, None])
    slot_r = _load_slots(idx_row, lo_tile, hi, BN, GR)
    ok_r = (slot_r >= 0) & (slot_r < num_slots)
    row_r = gl.where(ok_r, slot_r, 0).to(gl.int64) * stride_row
    cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))
    _cp_async(kr_buf, kv + row_r[:, None] + cols_r[None, :], mask=ok_r[:, None])


@gluon.jit
def _l2_prefetch(kv, stride_row, num_slots, idx_row, lo_tile, hi):
    """prefetch.global.L2 of every 128-byte line of the tile's rows (hints: no registers held)."""
    PF: gl.constexpr = gl.BlockedLayout([1, 1], [2, 16], [4, 1], [1, 0])
    slot = _load_slots(idx_row, lo_tile, hi, BN, PF)
    ok = (slot >= 0) & (slot < num_slots)
    line = gl.minimum(gl.arange(0, 16, layout=gl.SliceLayout(0, PF)) * 64, D_NOPE + D_ROPE - 1)
    ptrs = kv + (gl.where(ok, slot, 0).to(gl.int64) * stride_row)[:, None] + line[None, :]
    gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [ptrs],
                              dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _gather(kv, stride_row, num_slots, idx_row, lo_tile, hi, kn_buf, kr_buf):
    GC: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    slot = _load_slots(idx_row, lo_tile, hi, BN, GC)
    ok = (slot >= 0) & (slot < num_slots)
    row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
    for c in gl.static_range(D_NOPE // 64):
        cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, GC))
        _cp_async(kn_buf.slice(c * 64, 64, dim=1), kv + row[:, None] + cols[None, :], mask=ok[:, None])
    cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GC))
    _cp_async(kr_buf, kv + row[:, None] + cols_r[None, :], mask=ok[:, None])


@gluon.jit
def _epilogue_half(acc, m_o, l_o, COL0: gl.constexpr, W: gl.constexpr, sink, out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part,
                   t, heads0, split, num_heads, num_splits, O_L: gl.constexpr,
                   HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr, WRITE_LSE: gl.constexpr):
    heads = heads0 + gl.arange(0, BH, layout=gl.SliceLayout(1, O_L))
    hm = heads < num_heads
    cols = COL0 + gl.arange(0, W, layout=gl.SliceLayout(0, O_L))
    m_use = gl.where(m_o == float("-inf"), 0.0, m_o)
    if SPLIT_K:
        inv = gl.where(l_o > 0.0, 1.0 / gl.where(l_o > 0.0, l_o, 1.0), 0.0)
        part = (t * num_heads + heads) * num_splits + split
        gl.store(o_part + part[:, None] * D_NOPE + cols[None, :], acc * inv[:, None], mask=hm[:, None])
        if WRITE_LSE:
            gl.store(lse_part + part, gl.where(l_o > 0.0, m_o + gl.log2(gl.where(l_o > 0.0, l_o, 1.0)), float("-inf")),
                     mask=hm)
    else:
        denom = l_o
        if HAS_SINK:
            denom = denom + gl.exp2(gl.load(sink + heads, mask=hm, other=float("-inf")).to(gl.float32)
                                    * 1.4426950408889634 - m_use)
        inv = gl.where(l_o > 0.0, 1.0 / gl.where(l_o > 0.0, denom, 1.0), 0.0)
        o_row = out + t * stride_ot + heads.to(gl.int64) * stride_oh
        gl.store(o_row[:, None] + cols[None, :], (acc * inv[:, None]).to(out.dtype.element_ty), mask=hm[:, None])
        if RETURN_LSE:
            if WRITE_LSE:
                lse_val = gl.where(l_o > 0.0, (m_use + gl.log2(gl.where(l_o > 0.0, l_o, 1.0))) * 0.6931471805599453,
                                   float("inf"))
                gl.store(lse + t * stride_lt + heads, lse_val, mask=hm)


@gluon.jit
def _group_a(kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, sink, out, stride_ot, stride_oh, lse, stride_lt,
             o_part, lse_part, t, heads0, split, num_heads, num_splits,
             kn, kr, xs, bars, HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr,
             WHOLE: gl.constexpr, L2PF: gl.constexpr, DVA: gl.constexpr, prof, PROFILE: gl.constexpr):
    """Gathers (one tile ahead) and output columns [0, DVA)."""
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, DVA if DVA <= 256 else DVA // 2, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, O_L)
    acc = gl.zeros([BH, DVA], gl.float32, layout=O_L)
    t_free = gl.to_tensor(0).to(gl.int64)
    t_issue = gl.to_tensor(0).to(gl.int64)
    t_waitp = gl.to_tensor(0).to(gl.int64)
    t_pv = gl.to_tensor(0).to(gl.int64)
    for j in range(n_tiles):
        if PROFILE:
            c0 = _clock(j)
        stage = j % NS
        nxt = (j + 1) % NS
        if j + 1 < n_tiles:
            # Tile j+1 into the other stage, once B is done with tile j-1 there (A's own PV of j-1 is).
            mbarrier.wait(bars.index(4 + nxt), (((j + 1) // NS) & 1) ^ 1, pred=j >= 1)
            if PROFILE:
                c1 = _clock(j)
                t_free += c1 - c0
            if WHOLE:
                _gather_whole(kv, stride_row, num_slots, idx_row, lo + (j + 1) * BN, hi, kn.index(nxt), kr.index(nxt))
            else:
                _gather(kv, stride_row, num_slots, idx_row, lo + (j + 1) * BN, hi, kn.index(nxt), kr.index(nxt))
            async_copy.mbarrier_arrive(bars.index(0 + nxt), increment_count=False)
            if L2PF:
                if j + 2 < n_tiles:
                    _l2_prefetch(kv, stride_row, num_slots, idx_row, lo + (j + 2) * BN, hi)
        if PROFILE:
            c2 = _clock(j)
            t_issue += c2 - c0
        mbarrier.wait(bars.index(2 + stage), (j // NS) & 1)  # P(j), alpha(j) written
        if PROFILE:
            c3 = _clock(j)
            t_waitp += c3 - c2
        acc = acc * xs.index(stage).load(ROW)[:, None]
        acc = warpgroup_mma(kr.index(stage), kn.index(stage).slice(0, DVA, dim=1), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        if PROFILE:
            t_pv += _clock(j) - c3
    if PROFILE:
        gl.store(prof + 0, t_free)
        gl.store(prof + 1, t_issue)
        gl.store(prof + 2, t_waitp)
        gl.store(prof + 3, t_pv)
    mbarrier.wait(bars.index(6), 0)  # B's final row max and sum
    _epilogue_half(acc, xs.index(2).load(ROW), xs.index(3).load(ROW), 0, DVA, sink, out, stride_ot, stride_oh, lse,
                   stride_lt, o_part, lse_part, t, heads0, split, num_heads, num_splits, O_L,
                   HAS_SINK, RETURN_LSE, SPLIT_K, False)


@gluon.jit
def _group_b(qn, qr, kn, kr, xs, bars, idx_row, lo, hi, n_tiles, num_slots, score_scale, sink, out, stride_ot,
             stride_oh, lse, stride_lt, o_part, lse_part, t, heads0, split, num_heads, num_splits,
             HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr, DVA: gl.constexpr,
             prof, PROFILE: gl.constexpr):
    """S, softmax and P of every tile, and output columns [DVA, 512)."""
    DVB: gl.constexpr = D_NOPE - DVA
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DVB, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, S_L)
    m_i = gl.full([BH], float("-inf"), gl.float32, layout=ROW)
    l_i = gl.zeros([BH], gl.float32, layout=ROW)
    acc = gl.zeros([BH, DVB], gl.float32, layout=O_L)
    t_ready = gl.to_tensor(0).to(gl.int64)
    t_s = gl.to_tensor(0).to(gl.int64)
    t_soft = gl.to_tensor(0).to(gl.int64)
    t_p = gl.to_tensor(0).to(gl.int64)
    t_pv = gl.to_tensor(0).to(gl.int64)
    for j in range(n_tiles):
        stage = j % NS
        if PROFILE:
            c0 = _clock(j)
        mbarrier.wait(bars.index(0 + stage), (j // NS) & 1)
        if PROFILE:
            c1 = _clock(j)
            t_ready += c1 - c0
        fence_async_shared()  # the cp.async writes, before wgmma (the async proxy) reads them
        s = gl.zeros([BH, BN], gl.float32, layout=S_L)
        s = warpgroup_mma(qn, kn.index(stage).permute((1, 0)), s, use_acc=False, is_async=True)
        s = warpgroup_mma(qr, kr.index(stage).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(0, deps=[s])
        if PROFILE:
            c2 = _clock(j)
            t_s += c2 - c1
        offs = lo + j * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, S_L))
        slot = gl.load(idx_row + offs, mask=offs < hi, other=-1)
        s = gl.where(((slot >= 0) & (slot < num_slots))[None, :], s * score_scale, float("-inf"))
        m_new = gl.maximum(m_i, gl.max(s, axis=1))
        m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = gl.exp2(m_i - m_use)
        p = gl.exp2(s - m_use[:, None])
        l_i = l_i * alpha + gl.sum(p, axis=1)
        m_i = m_new
        if PROFILE:
            c3 = _clock(j)
            t_soft += c3 - c2
        kr.index(stage).store(p.to(gl.bfloat16))  # over the rope columns: S is done with them
        xs.index(stage).store(alpha)
        fence_async_shared()
        _cta_barrier()
        mbarrier.arrive(bars.index(2 + stage))
        if PROFILE:
            c4 = _clock(j)
            t_p += c4 - c3
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, O_L))[:, None]
        acc = warpgroup_mma(kr.index(stage), kn.index(stage).slice(DVA, DVB, dim=1), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        _cta_barrier()
        mbarrier.arrive(bars.index(4 + stage))
        if PROFILE:
            t_pv += _clock(j) - c4
    if PROFILE:
        gl.store(prof + 8, t_ready)
        gl.store(prof + 9, t_s)
        gl.store(prof + 10, t_soft)
        gl.store(prof + 11, t_p)
        gl.store(prof + 12, t_pv)
    xs.index(2).store(m_i)
    xs.index(3).store(l_i)
    _cta_barrier()
    mbarrier.arrive(bars.index(6))
    _epilogue_half(acc, gl.convert_layout(m_i, gl.SliceLayout(1, O_L)), gl.convert_layout(l_i, gl.SliceLayout(1, O_L)),
                   DVA, DVB, sink, out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part, t, heads0, split, num_heads,
                   num_splits, O_L, HAS_SINK, RETURN_LSE, SPLIT_K, True)


@gluon.jit
def sparse_mla_sm90_split_bf16(
    q, stride_qt, stride_qh,
    kv, stride_row, num_slots,
    idx, stride_it, topk_len,
    sink,
    out, stride_ot, stride_oh,
    lse, stride_lt,
    o_part, lse_part, prof,
    sm_scale, num_heads, num_splits,
    TOPK: gl.constexpr, HAS_TOPK_LEN: gl.constexpr, HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr,
    SPLIT_K: gl.constexpr, A_REGS: gl.constexpr, WHOLE: gl.constexpr, L2PF: gl.constexpr, DVA: gl.constexpr,
    PROFILE: gl.constexpr, num_warps: gl.constexpr,
):
    gl.static_assert(num_warps == 4)  # warp group B; A is a 4-warp worker
    pid = gl.program_id(0)
    head_blocks = gl.cdiv(num_heads, BH)
    hb = pid % head_blocks
    split = (pid // head_blocks) % num_splits
    t = (pid // head_blocks // num_splits).to(gl.int64)
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    qn = gl.allocate_shared_memory(gl.bfloat16, [BH, D_NOPE], SW)
    qr = gl.allocate_shared_memory(gl.bfloat16, [BH, D_ROPE], SW)
    kn = gl.allocate_shared_memory(gl.bfloat16, [NS, BN, D_NOPE], SW)
    kr = gl.allocate_shared_memory(gl.bfloat16, [NS, BN, D_ROPE], SW)
    # alpha per stage, then the final m and l
    xs = gl.allocate_shared_memory(gl.float32, [4, BH], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    bars = gl.allocate_shared_memory(gl.int64, [7, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NS):
        mbarrier.init(bars.index(0 + i), count=128)  # ready: one cp.async arrive per thread of A
        mbarrier.init(bars.index(2 + i), count=1)  # p_ready
        mbarrier.init(bars.index(4 + i), count=1)  # free
    mbarrier.init(bars.index(6), count=1)  # md

    chunk = gl.cdiv(gl.cdiv(TOPK, num_splits), BN) * BN
    lo = split * chunk
    hi = gl.minimum(lo + chunk, TOPK)
    if HAS_TOPK_LEN:
        hi = gl.minimum(hi, gl.load(topk_len + t))
    n_tiles = gl.maximum(gl.cdiv(hi - lo, BN), 0)
    idx_row = idx + t * stride_it

    # Tile 0's gather and Q, by B's warps before the partitions start (A gathers from tile 1 on).
    _gather(kv, stride_row, num_slots, idx_row, lo, hi, kn.index(0), kr.index(0))
    async_copy.mbarrier_arrive(bars.index(0), increment_count=False)
    GQ: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    heads_q = hb * BH + gl.arange(0, BH, layout=gl.SliceLayout(1, GQ))
    q_row = q + t * stride_qt + heads_q.to(gl.int64) * stride_qh
    hm_q = (heads_q < num_heads)[:, None]
    for c in gl.static_range(D_NOPE // 64):
        cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, GQ))
        qn.slice(c * 64, 64, dim=1).store(gl.load(q_row[:, None] + cols[None, :], mask=hm_q, other=0.0))
    cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GQ))
    qr.store(gl.load(q_row[:, None] + cols_r[None, :], mask=hm_q, other=0.0))
    fence_async_shared()
    _cta_barrier()
    score_scale = sm_scale * 1.4426950408889634
    gl.warp_specialize([
        (_group_b, (qn, qr, kn, kr, xs, bars, idx_row, lo, hi, n_tiles, num_slots, score_scale, sink, out,
                    stride_ot, stride_oh, lse, stride_lt, o_part, lse_part, t, hb * BH, split, num_heads,
                    num_splits, HAS_SINK, RETURN_LSE, SPLIT_K, DVA, prof + pid * 16, PROFILE)),
        (_group_a, (kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, sink, out, stride_ot, stride_oh, lse,
                    stride_lt, o_part, lse_part, t, hb * BH, split, num_heads, num_splits, kn, kr, xs, bars,
                    HAS_SINK, RETURN_LSE, SPLIT_K, WHOLE, L2PF, DVA, prof + pid * 16, PROFILE)),
    ], [4], [A_REGS])
