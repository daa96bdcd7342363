"""Issue 7 prototype (session 12): the bf16 sparse-MLA sm90 kernel with two warp-specialized
warp groups, FlashMLA's division of the work, in Gluon.

Session 12's first Gluon kernel split S = Q K^T across its two warp groups by columns: each
wgmma is then 64 x 32, and re-reading the 72 KB Q tile per 32 columns makes S bound by shared
memory bandwidth, with two cross-warp-group reductions per tile. Here each warp group owns
whole tiles and half of the output:

  warp group w (4 warps, its own partition) computes S = Q K^T for tiles 2i + w (64 x 64,
  K = 576), takes the other group's row max through shared memory (one exchange per pair of
  tiles: both then use the same running max), writes its P (bf16) over the tile's rope
  columns (dead once S is done), and accumulates output columns [256 w, 256 w + 256) of both
  tiles: its own P from registers (an RS wgmma), the other's from shared memory.
  mbarriers order the exchanges: m[w] (max written), p[w] (P written), free[w] (the other
  group is done reading stage w, which w may then refill).

Each group gathers its own tile by cp.async into its one stage (Q 72 KB + two 72 KB stages
fill the 227 KB); the gather of the next pair waits only for the other group's release.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    async_copy, fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

from gluon_kernel import _cp_async, _cta_barrier, _load_slots


@gluon.jit
def _gather(kv, stride_row, num_slots, idx_row, lo_tile, hi, kn_buf, kr_buf,
            BLOCK_N: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr, CW: gl.constexpr):
    """cp.async one tile into a stage, CW columns at a time (the addresses of a whole 512-column
    row block would take 64 registers a thread); invalid slots are zero-filled, never read."""
    GC: gl.constexpr = gl.BlockedLayout([1, 8], [32 * 8 // CW, CW // 8], [4, 1], [1, 0])
    GR: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    slot = _load_slots(idx_row, lo_tile, hi, BLOCK_N, GC)
    ok = (slot >= 0) & (slot < num_slots)
    row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
    for c in gl.static_range(D_NOPE // CW):
        cols = c * CW + gl.arange(0, CW, layout=gl.SliceLayout(0, GC))
        _cp_async(kn_buf.slice(c * CW, CW, dim=1), kv + row[:, None] + cols[None, :], mask=ok[:, None])
    if D_ROPE > 0:
        slot_r = _load_slots(idx_row, lo_tile, hi, BLOCK_N, GR)
        ok_r = (slot_r >= 0) & (slot_r < num_slots)
        row_r = gl.where(ok_r, slot_r, 0).to(gl.int64) * stride_row
        cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))
        _cp_async(kr_buf, kv + row_r[:, None] + cols_r[None, :], mask=ok_r[:, None])


@gluon.jit
def _group(WG: gl.constexpr, kv, stride_row, num_slots, idx_row, lo, hi, n_pairs, score_scale, sink,
           out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part, t, split, num_splits,
           heads0, num_heads, qn, qr, kn, kr, mx, bars,
           HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr,
           BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr):
    DV: gl.constexpr = D_NOPE // 2  # this group's output columns
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, BLOCK_N, 16])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                  instr_shape=[16, DV, 16])
    ROW: gl.constexpr = gl.SliceLayout(1, S_L)
    OTHER: gl.constexpr = 1 - WG
    bar_m = bars.index(0 + WG)
    bar_m_other = bars.index(0 + OTHER)
    bar_p = bars.index(2 + WG)
    bar_p_other = bars.index(2 + OTHER)
    bar_free = bars.index(4 + WG)
    bar_free_other = bars.index(4 + OTHER)
    bar_l = bars.index(6 + WG)
    bar_l_other = bars.index(6 + OTHER)
    my_kn = kn.index(WG)
    my_kr = kr.index(WG)
    v_mine = my_kn.slice(WG * DV, DV, dim=1)
    v_other = kn.index(OTHER).slice(WG * DV, DV, dim=1)
    p_other = kr.index(OTHER)

    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=ROW)
    l_i = gl.zeros([BLOCK_H], gl.float32, layout=ROW)
    acc = gl.zeros([BLOCK_H, DV], gl.float32, layout=O_L)
    for i in range(n_pairs):
        phase = i & 1
        lo_tile = lo + (2 * i + WG) * BLOCK_N
        # Refill my stage once the other group has read pair i-1's V and P from it.
        mbarrier.wait(bar_free, phase ^ 1, pred=i > 0)
        _gather(kv, stride_row, num_slots, idx_row, lo_tile, hi, my_kn, my_kr, BLOCK_N, D_NOPE, D_ROPE, 128)
        async_copy.commit_group()
        async_copy.wait_group(0)
        fence_async_shared()
        _cta_barrier()
        s = gl.zeros([BLOCK_H, BLOCK_N], gl.float32, layout=S_L)
        s = warpgroup_mma(qn, my_kn.permute((1, 0)), s, use_acc=False, is_async=True)
        if D_ROPE > 0:
            s = warpgroup_mma(qr, my_kr.permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(0, deps=[s])
        offs = lo_tile + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, S_L))
        slot = gl.load(idx_row + offs, mask=offs < hi, other=-1)
        ok = (slot >= 0) & (slot < num_slots)
        s = gl.where(ok[None, :], s * score_scale, float("-inf"))
        m_mine = gl.max(s, axis=1)
        # Row max exchange: both groups then scale by the same running max.
        mx.index(WG).store(m_mine)
        _cta_barrier()
        mbarrier.arrive(bar_m)
        mbarrier.wait(bar_m_other, phase)
        m_new = gl.maximum(m_i, gl.maximum(m_mine, mx.index(OTHER).load(ROW)))
        m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = gl.exp2(m_i - m_use)
        p = gl.exp2(s - m_use[:, None])
        l_i = l_i * alpha + gl.sum(p, axis=1)
        m_i = m_new
        # My P over my stage's rope columns, which only my S read; both P.V wgmmas read it there.
        my_kr.store(p.to(gl.bfloat16))
        fence_async_shared()
        _cta_barrier()
        mbarrier.arrive(bar_p)
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, O_L))[:, None]
        acc = warpgroup_mma(my_kr, v_mine, acc, is_async=True)
        mbarrier.wait(bar_p_other, phase)
        acc = warpgroup_mma(p_other, v_other, acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        _cta_barrier()
        mbarrier.arrive(bar_free_other)
    # Each group's l covers its own tiles, under the shared running max: add the other's.
    mx.index(WG).store(l_i)
    _cta_barrier()
    mbarrier.arrive(bar_l)
    mbarrier.wait(bar_l_other, 0)
    l_i = l_i + mx.index(OTHER).load(ROW)

    # The epilogue goes through my stage (once the other group has released it): a direct
    # store of the accumulator layout would need a 64-bit address per column pair.
    mbarrier.wait(bar_free, (n_pairs - 1) & 1, pred=n_pairs > 0)
    rows = gl.arange(0, BLOCK_H, layout=ROW)
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, O_L))
    m_o = gl.convert_layout(m_i, gl.SliceLayout(1, O_L))
    m_use = gl.where(m_o == float("-inf"), 0.0, m_o)
    LOG2E: gl.constexpr = 1.4426950408889634
    GO: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])  # 64 x 32 chunks
    heads_c = heads0 + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GO))
    hm_c = heads_c < num_heads
    if SPLIT_K:
        # Partial: this split's normalized output (fp32) and log2-sum-exp (-inf if empty).
        inv = gl.where(l_o > 0.0, 1.0 / gl.where(l_o > 0.0, l_o, 1.0), 0.0)
        buf = my_kn._reinterpret(gl.float32, [BLOCK_H, DV], gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=32, rank=2))
        buf.store(acc * inv[:, None])
        _cta_barrier()
        part_c = (t * num_heads + heads_c) * num_splits + split
        for c in gl.static_range(DV // 32):
            cols = WG * DV + c * 32 + gl.arange(0, 32, layout=gl.SliceLayout(0, GO))
            gl.store(o_part + part_c[:, None] * D_NOPE + cols[None, :], buf.slice(c * 32, 32, dim=1).load(GO),
                     mask=hm_c[:, None])
        if WG == 0:
            heads = heads0 + rows
            part = (t * num_heads + heads) * num_splits + split
            lse2 = gl.where(l_i > 0.0, m_i + gl.log2(gl.where(l_i > 0.0, l_i, 1.0)), float("-inf"))
            gl.store(lse_part + part, lse2, mask=heads < num_heads)
    else:
        denom = l_o
        if HAS_SINK:
            sink_h = gl.load(sink + heads0 + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, O_L)),
                             mask=heads0 + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, O_L)) < num_heads,
                             other=float("-inf")).to(gl.float32)
            denom = denom + gl.exp2(sink_h * LOG2E - m_use)
        inv = gl.where(l_o > 0.0, 1.0 / gl.where(l_o > 0.0, denom, 1.0), 0.0)
        buf = my_kn.slice(0, DV, dim=1)
        buf.store((acc * inv[:, None]).to(gl.bfloat16))
        _cta_barrier()
        o_rows = out + t * stride_ot + heads_c.to(gl.int64) * stride_oh
        for c in gl.static_range(DV // 32):
            cols = WG * DV + c * 32 + gl.arange(0, 32, layout=gl.SliceLayout(0, GO))
            gl.store(o_rows[:, None] + cols[None, :], buf.slice(c * 32, 32, dim=1).load(GO).to(out.dtype.element_ty),
                     mask=hm_c[:, None])
        if RETURN_LSE:
            if WG == 0:
                heads = heads0 + rows
                m_u = gl.where(m_i == float("-inf"), 0.0, m_i)
                lse_val = gl.where(l_i > 0.0, (m_u + gl.log2(gl.where(l_i > 0.0, l_i, 1.0))) * 0.6931471805599453,
                                   float("inf"))
                gl.store(lse + t * stride_lt + heads, lse_val, mask=heads < num_heads)


@gluon.jit
def sparse_mla_sm90_ws_bf16(
    q, stride_qt, stride_qh,
    kv, stride_row, num_slots,
    idx, stride_it, topk_len,
    sink,
    out, stride_ot, stride_oh,
    lse, stride_lt,
    o_part, lse_part,
    sm_scale, num_heads, num_splits,
    TOPK: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr,
    HAS_TOPK_LEN: gl.constexpr, HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr,
    BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, WORKER_REGS: gl.constexpr, num_warps: gl.constexpr,
):
    gl.static_assert(num_warps == 4)  # the default partition: warp group 0; a 4-warp worker is group 1
    pid = gl.program_id(0)
    head_blocks = gl.cdiv(num_heads, BLOCK_H)
    hb = pid % head_blocks
    split = (pid // head_blocks) % num_splits
    t = (pid // head_blocks // num_splits).to(gl.int64)
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    qn = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_NOPE], SW)
    qr = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_ROPE], SW)
    kn = gl.allocate_shared_memory(gl.bfloat16, [2, BLOCK_N, D_NOPE], SW)
    kr = gl.allocate_shared_memory(gl.bfloat16, [2, BLOCK_N, D_ROPE], SW)
    mx = gl.allocate_shared_memory(gl.float32, [2, BLOCK_H], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    bars = gl.allocate_shared_memory(gl.int64, [8, 1], mbarrier.MBarrierLayout())
    for b in gl.static_range(8):
        mbarrier.init(bars.index(b), count=1)

    chunk = gl.cdiv(gl.cdiv(TOPK, num_splits), 2 * BLOCK_N) * 2 * BLOCK_N
    lo = split * chunk
    hi = gl.minimum(lo + chunk, TOPK)
    if HAS_TOPK_LEN:
        hi = gl.minimum(hi, gl.load(topk_len + t))
    n_pairs = gl.maximum(gl.cdiv(hi - lo, 2 * BLOCK_N), 0)
    idx_row = idx + t * stride_it

    # Q into shared memory, 128 columns at a time (bounded registers).
    GQ: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [num_warps, 1], [1, 0])
    GQR: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
    heads_q = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GQ))
    q_row = q + t * stride_qt + heads_q.to(gl.int64) * stride_qh
    for c in gl.static_range(D_NOPE // 128):
        qn.slice(c * 128, 128, dim=1).store(
            gl.load(q_row[:, None] + c * 128 + gl.arange(0, 128, layout=gl.SliceLayout(0, GQ))[None, :],
                    mask=(heads_q < num_heads)[:, None], other=0.0))
    heads_r = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GQR))
    q_row_r = q + t * stride_qt + heads_r.to(gl.int64) * stride_qh
    qr.store(gl.load(q_row_r[:, None] + D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GQR))[None, :],
                     mask=(heads_r < num_heads)[:, None], other=0.0))
    fence_async_shared()
    _cta_barrier()

    score_scale = sm_scale * 1.4426950408889634
    # The partitions' argument tuples are written out whole: a tuple built in a variable first
    # turns its constexprs into tensors (Triton 3.6).
    gl.warp_specialize([
        (_group, (0, kv, stride_row, num_slots, idx_row, lo, hi, n_pairs, score_scale, sink,
                  out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part, t, split, num_splits,
                  hb * BLOCK_H, num_heads, qn, qr, kn, kr, mx, bars,
                  HAS_SINK, RETURN_LSE, SPLIT_K, BLOCK_H, BLOCK_N, D_NOPE, D_ROPE)),
        (_group, (1, kv, stride_row, num_slots, idx_row, lo, hi, n_pairs, score_scale, sink,
                  out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part, t, split, num_splits,
                  hb * BLOCK_H, num_heads, qn, qr, kn, kr, mx, bars,
                  HAS_SINK, RETURN_LSE, SPLIT_K, BLOCK_H, BLOCK_N, D_NOPE, D_ROPE)),
    ], [4], [WORKER_REGS])
