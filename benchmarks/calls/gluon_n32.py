"""Issue 7 prototype for session 13 (written in session 12, compile-checked only, NOT yet run on a GPU):
the shipped Gluon kernel (templates/sparse_mla_gluon.py.jinja, rendered for the default spec) with
32-row tiles in 4 stages and FA3's overlap inside group B.

Session 12's profile: group B is the critical path (S 1380 cycles a 64-row tile, softmax 1070), and
with two 72 KB stages the next tile is never in while the current one is scored, so the softmax
cannot run under the next S. With 32-row tiles four 36 KB stages fit beside Q, the gather runs three
tiles ahead, and B issues S(j+1) (async) before the softmax of tile j. The price: 64 x 32 S wgmmas
read Q per 32 rows (bound by shared memory, ~1.5x the MMA time of S). P (64 x 32 bf16, 4 KB) goes over
the stage's rope columns (32 x 64 bf16, 4 KB) through a reinterpreted view. Group A gathers one tile
past the list's end (masked, zero-filled), so B's S(j+1) needs no branch.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    async_copy, fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

# The cp.async gather is async_copy_global_to_shared in Triton 3.6, async_load later; the
# CTA (or partition) barrier gl.thread_barrier in 3.6, gl.barrier later.
_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
_barrier = getattr(gl, "barrier", None) or gl.thread_barrier
# A shared-memory view of other type or shape: _reinterpret in Triton 3.6, reinterpret later.
_PUBLIC_REINTERPRET = gl.constexpr(hasattr(gl.shared_memory_descriptor, "reinterpret"))

BLOCK_H = gl.constexpr(64)
BLOCK_N = gl.constexpr(32)
NUM_STAGES = gl.constexpr(4)
NUM_WARPS = gl.constexpr(4)  # group B; group A is 4 more
A_REGS = gl.constexpr(256)
PAGE_SIZE = gl.constexpr(1)
TOPK = gl.constexpr(2048)
D_NOPE = gl.constexpr(512)
D_ROPE = gl.constexpr(64)
# The template renders these from the spec; the prototype always has them (a call without a sink
# passes -inf sinks, one without LSE a scratch buffer).
HAS_SINK = gl.constexpr(True)
RETURN_LSE = gl.constexpr(True)
# Output columns: A owns [0, 384) as two accumulators (a tensor's width is a power of two), B the
# last 128, since B also computes S and the softmax (session 12 call 8's profile: with 256 each, A
# waited ~980 cycles a tile for B's P).
DV_A0 = gl.constexpr(256)
DV_A1 = gl.constexpr(128)
DV_B = gl.constexpr(128)


@gluon.jit
def _slots(idx_row, stride_ik, lo_tile, hi, L: gl.constexpr):
    """The slot ids of the tile at list position lo_tile (-1 past hi), as rows of layout L."""
    offs = lo_tile + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, L))
    return gl.load(idx_row + offs * stride_ik, mask=offs < hi, other=-1)


@gluon.jit
def _gather(kv, stride_page, stride_row, num_slots, idx_row, stride_ik, lo_tile, hi, kn_buf, kr_buf):
    """cp.async one tile into a stage, 64 columns at a time (bounded registers); invalid slots
    (-1, past the cache or the list) are zero-filled, never read."""
    GC: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    slot = _slots(idx_row, stride_ik, lo_tile, hi, GC)
    ok = (slot >= 0) & (slot < num_slots)
    s = gl.where(ok, slot, 0).to(gl.int64)
    row = (s // PAGE_SIZE) * stride_page + (s % PAGE_SIZE) * stride_row
    for c in gl.static_range(D_NOPE // 64):
        cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, GC))
        _cp_async(kn_buf.slice(c * 64, 64, dim=1), kv + row[:, None] + cols[None, :], mask=ok[:, None])
    cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GC))
    _cp_async(kr_buf, kv + row[:, None] + cols_r[None, :], mask=ok[:, None])


@gluon.jit
def _write_cols(acc, m_o, l_o, COL0: gl.constexpr, W: gl.constexpr, WRITE_LSE: gl.constexpr, sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt,
                stride_lh, o_part, lse_part, t, heads0, split, num_heads, num_splits, O_L: gl.constexpr,
                SPLIT_K: gl.constexpr):
    """Output columns [COL0, COL0 + W) of one accumulator; rows with nothing attended write 0 (and
    LSE +inf), splits write partials. WRITE_LSE: this call also writes the rows' LSE."""
    heads = heads0 + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, O_L))
    hm = heads < num_heads
    cols = COL0 + gl.arange(0, W, layout=gl.SliceLayout(0, O_L))
    m_use = gl.where(m_o == float("-inf"), 0.0, m_o)
    if SPLIT_K:
        # This split's normalized output and its log2-sum-exp (-inf if empty), for the combine.
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
        gl.store(o_row[:, None] + cols[None, :] * stride_od, (acc * inv[:, None]).to(out.dtype.element_ty),
                 mask=hm[:, None])
        if RETURN_LSE:
            if WRITE_LSE:
                lse_val = gl.where(l_o > 0.0, (m_use + gl.log2(gl.where(l_o > 0.0, l_o, 1.0))) * 0.6931471805599453,
                                   float("inf"))
                gl.store(lse + t * stride_lt + heads * stride_lh, lse_val, mask=hm)


# Barriers: ready[s] at R + s, p_ready[s] at PR + s, free[s] at FR + s, md at MD. Exchange vectors in xs:
# alpha of stage s at s, the final row max at NUM_STAGES, the row sum at NUM_STAGES + 1.
R = gl.constexpr(0)
PR = gl.constexpr(4)
FR = gl.constexpr(8)
MD = gl.constexpr(12)


@gluon.jit
def _p_view(kr_buf):
    """P (64 heads x 32 rows, bf16) over a stage's rope columns (32 rows x 64, bf16): the same 4 KB."""
    layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=16, rank=2)
    if _PUBLIC_REINTERPRET:
        return kr_buf.reinterpret(gl.bfloat16, [BLOCK_H, BLOCK_N], layout)
    else:
        return kr_buf._reinterpret(gl.bfloat16, [BLOCK_H, BLOCK_N], layout)


@gluon.jit
def _group_a(kv, stride_page, stride_row, num_slots, idx_row, stride_ik, lo, hi, n_tiles, kn, kr, xs, bars,
             sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part, lse_part,
             t, heads0, split, num_heads, num_splits, SPLIT_K: gl.constexpr):
    """Gathers (NUM_STAGES - 1 tiles ahead, one masked tile past the end) and output columns [0, 384)."""
    O_L0: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DV_A0, 16])
    O_L1: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DV_A1, 16])
    acc0 = gl.zeros([BLOCK_H, DV_A0], gl.float32, layout=O_L0)
    acc1 = gl.zeros([BLOCK_H, DV_A1], gl.float32, layout=O_L1)
    LA: gl.constexpr = NUM_STAGES - 1
    for j in range(n_tiles):
        stage = j % NUM_STAGES
        g = j + LA  # the tile gathered now, into the stage of tile j - 1
        if g <= n_tiles:
            gs = g % NUM_STAGES
            mbarrier.wait(bars.index(FR + gs), ((g // NUM_STAGES) & 1) ^ 1, pred=g >= NUM_STAGES)
            _gather(kv, stride_page, stride_row, num_slots, idx_row, stride_ik, lo + g * BLOCK_N, hi,
                    kn.index(gs), kr.index(gs))
            async_copy.mbarrier_arrive(bars.index(R + gs), increment_count=False)
        mbarrier.wait(bars.index(PR + stage), (j // NUM_STAGES) & 1)  # P(j) and alpha(j) written
        acc0 = acc0 * xs.index(stage).load(gl.SliceLayout(1, O_L0))[:, None]
        acc1 = acc1 * xs.index(stage).load(gl.SliceLayout(1, O_L1))[:, None]
        p_j = _p_view(kr.index(stage))
        acc0 = warpgroup_mma(p_j, kn.index(stage).slice(0, DV_A0, dim=1), acc0, is_async=True)
        acc1 = warpgroup_mma(p_j, kn.index(stage).slice(DV_A0, DV_A1, dim=1), acc1, is_async=True)
        acc0, acc1 = warpgroup_mma_wait(0, deps=[acc0, acc1])
    mbarrier.wait(bars.index(MD), 0)  # B's final row max and sum
    _write_cols(acc0, xs.index(NUM_STAGES).load(gl.SliceLayout(1, O_L0)), xs.index(NUM_STAGES + 1).load(gl.SliceLayout(1, O_L0)),
                0, DV_A0, False, sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part,
                lse_part, t, heads0, split, num_heads, num_splits, O_L0, SPLIT_K)
    _write_cols(acc1, xs.index(NUM_STAGES).load(gl.SliceLayout(1, O_L1)), xs.index(NUM_STAGES + 1).load(gl.SliceLayout(1, O_L1)),
                DV_A0, DV_A1, False, sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part,
                lse_part, t, heads0, split, num_heads, num_splits, O_L1, SPLIT_K)


@gluon.jit
def _scores(qn, qr, kn_buf, kr_buf, S_L: gl.constexpr):
    s = gl.zeros([BLOCK_H, BLOCK_N], gl.float32, layout=S_L)
    s = warpgroup_mma(qn, kn_buf.permute((1, 0)), s, use_acc=False, is_async=True)
    return warpgroup_mma(qr, kr_buf.permute((1, 0)), s, is_async=True)


@gluon.jit
def _group_b(qn, qr, kn, kr, xs, bars, idx_row, stride_ik, lo, hi, n_tiles, num_slots, score_scale,
             sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part, lse_part,
             t, heads0, split, num_heads, num_splits, SPLIT_K: gl.constexpr):
    """S of every tile, issued one tile ahead so that the softmax of tile j runs under S(j+1) on the
    tensor cores; P, and output columns [384, 512)."""
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DV_B, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, S_L)
    COLS: gl.constexpr = gl.SliceLayout(0, S_L)
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=ROW)
    l_i = gl.zeros([BLOCK_H], gl.float32, layout=ROW)
    acc = gl.zeros([BLOCK_H, DV_B], gl.float32, layout=O_L)
    offs = lo + gl.arange(0, BLOCK_N, layout=COLS)
    slot_nx = gl.load(idx_row + offs * stride_ik, mask=offs < hi, other=-1)
    if n_tiles > 0:
        mbarrier.wait(bars.index(R + 0), 0)
        fence_async_shared()
        s = _scores(qn, qr, kn.index(0), kr.index(0), S_L)
        s = warpgroup_mma_wait(0, deps=[s])
        for j in range(n_tiles):
            stage = j % NUM_STAGES
            nxt = (j + 1) % NUM_STAGES
            slot = slot_nx
            offs = lo + (j + 1) * BLOCK_N + gl.arange(0, BLOCK_N, layout=COLS)
            slot_nx = gl.load(idx_row + offs * stride_ik, mask=offs < hi, other=-1)
            # S(j+1): tile j+1 (past the end: a masked, zero-filled tile) was gathered 3 tiles ahead.
            mbarrier.wait(bars.index(R + nxt), ((j + 1) // NUM_STAGES) & 1)
            fence_async_shared()
            s_nx = _scores(qn, qr, kn.index(nxt), kr.index(nxt), S_L)
            # The softmax of tile j, while S(j+1) runs.
            s = gl.where(((slot >= 0) & (slot < num_slots))[None, :], s * score_scale, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(s, axis=1))
            m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = gl.exp2(m_i - m_use)
            p = gl.exp2(s - m_use[:, None])
            l_i = l_i * alpha + gl.sum(p, axis=1)
            m_i = m_new
            # S(j) is done with the rope columns of stage j: P(j) goes there.
            p_j = _p_view(kr.index(stage))
            p_j.store(p.to(gl.bfloat16))
            xs.index(stage).store(alpha)
            fence_async_shared()
            _barrier()
            mbarrier.arrive(bars.index(PR + stage))
            acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, O_L))[:, None]
            acc = warpgroup_mma(p_j, kn.index(stage).slice(DV_A0 + DV_A1, DV_B, dim=1), acc, is_async=True)
            s, acc = warpgroup_mma_wait(0, deps=[s_nx, acc])
            _barrier()
            mbarrier.arrive(bars.index(FR + stage))
    xs.index(NUM_STAGES).store(m_i)
    xs.index(NUM_STAGES + 1).store(l_i)
    _barrier()
    mbarrier.arrive(bars.index(MD))
    _write_cols(acc, gl.convert_layout(m_i, gl.SliceLayout(1, O_L)), gl.convert_layout(l_i, gl.SliceLayout(1, O_L)),
                DV_A0 + DV_A1, DV_B, True, sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part, lse_part,
                t, heads0, split, num_heads, num_splits, O_L, SPLIT_K)


@gluon.jit
def sparse_mla_fwd_gluon(
    q, stride_qt, stride_qh, stride_qd,
    kv_elem, stride_page, stride_row, num_slots,
    idx, stride_it, stride_ik, topk_len, kv_scale,
    sink,
    out, stride_ot, stride_oh, stride_od,
    lse, stride_lt, stride_lh,
    o_part, lse_part,
    sm_scale, num_heads, num_splits,
    HAS_TOPK_LEN: gl.constexpr, SPLIT_K: gl.constexpr,
):
    # One program: 64 heads x one token x one split; a token's programs are adjacent in launch
    # order, so its head blocks share the gathered rows through L2.
    pid = gl.program_id(0)
    head_blocks = gl.cdiv(num_heads, BLOCK_H)
    hb = pid % head_blocks
    split = (pid // head_blocks) % num_splits
    t = (pid // head_blocks // num_splits).to(gl.int64)
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    qn = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_NOPE], SW)
    qr = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_ROPE], SW)
    kn = gl.allocate_shared_memory(gl.bfloat16, [NUM_STAGES, BLOCK_N, D_NOPE], SW)
    kr = gl.allocate_shared_memory(gl.bfloat16, [NUM_STAGES, BLOCK_N, D_ROPE], SW)
    # alpha of each stage's tile, then the final row max and sum
    xs = gl.allocate_shared_memory(gl.float32, [NUM_STAGES + 2, BLOCK_H], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    bars = gl.allocate_shared_memory(gl.int64, [MD + 1, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(bars.index(R + i), count=128)  # ready: one cp.async arrive per gathering thread
        mbarrier.init(bars.index(PR + i), count=1)  # p_ready
        mbarrier.init(bars.index(FR + i), count=1)  # free
    mbarrier.init(bars.index(MD), count=1)  # md

    # This split's share of the top-k list, in whole tiles (as the Triton kernel splits it).
    chunk = gl.cdiv(gl.cdiv(TOPK, num_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = gl.minimum(lo + chunk, TOPK)
    if HAS_TOPK_LEN:
        hi = gl.minimum(hi, gl.load(topk_len + t))
    n_tiles = gl.maximum(gl.cdiv(hi - lo, BLOCK_N), 0)
    idx_row = idx + t * stride_it

    # Tiles 0..NUM_STAGES-2 gathered and Q loaded by B's warps before the partitions start (A gathers
    # from tile NUM_STAGES - 1 on, up to tile n_tiles, one masked tile past the end).
    for i in gl.static_range(NUM_STAGES - 1):
        _gather(kv_elem, stride_page, stride_row, num_slots, idx_row, stride_ik, lo + i * BLOCK_N, hi, kn.index(i),
                kr.index(i))
        async_copy.mbarrier_arrive(bars.index(R + i), increment_count=False)
    GQ: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [NUM_WARPS, 1], [1, 0])
    heads_q = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GQ))
    q_row = q + t * stride_qt + heads_q.to(gl.int64) * stride_qh
    hm_q = (heads_q < num_heads)[:, None]
    for c in gl.static_range(D_NOPE // 64):
        cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, GQ))
        qn.slice(c * 64, 64, dim=1).store(gl.load(q_row[:, None] + cols[None, :] * stride_qd, mask=hm_q, other=0.0))
    cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GQ))
    qr.store(gl.load(q_row[:, None] + cols_r[None, :] * stride_qd, mask=hm_q, other=0.0))
    fence_async_shared()
    _barrier()
    score_scale = sm_scale * 1.4426950408889634
    gl.warp_specialize([
        (_group_b, (qn, qr, kn, kr, xs, bars, idx_row, stride_ik, lo, hi, n_tiles, num_slots, score_scale,
                    sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part, lse_part,
                    t, hb * BLOCK_H, split, num_heads, num_splits, SPLIT_K)),
        (_group_a, (kv_elem, stride_page, stride_row, num_slots, idx_row, stride_ik, lo, hi, n_tiles, kn, kr, xs,
                    bars, sink, out, stride_ot, stride_oh, stride_od, lse, stride_lt, stride_lh, o_part, lse_part,
                    t, hb * BLOCK_H, split, num_heads, num_splits, SPLIT_K)),
    ], [4], [A_REGS])

