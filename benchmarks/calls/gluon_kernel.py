"""Issue 7 prototype (session 12): the bf16 sparse-MLA decode kernel for sm90 in Gluon.

Why Gluon: Triton's own pipeliner keeps the gathered KV one tile ahead, waits QK's wgmma at
once and never overlaps softmax with an MMA (DEVELOPERS.md). Here the schedule is explicit:

  one program = 64 heads (the wgmma M) x one token x one split of its top-k list, 8 warps
  (two warp groups). Q sits in shared memory; KV tiles of BLOCK_N gathered rows go through a
  NUM_STAGES ring of cp.async groups. S = Q K^T is split across the warp groups by columns
  (each computes BLOCK_N/2 of them, no redundant MMA); P goes through shared memory to the
  P.V wgmma, whose 512 output columns are split 256 per warp group.
  Per tile j:   issue S(j+1) = Q K(j+1)^T      (async)
                issue O += P(j) V(j)            (async)
                wait S(j+1); softmax(j+1)       (overlaps P(j) V(j) on the tensor cores)
                wait O; stage j is free -> issue the gather of tile j + NUM_STAGES
                P(j+1) -> shared memory; O *= alpha(j+1)

KV: bf16 rows of D_NOPE (+ D_ROPE) elements at slot * stride_row (page_size 1 view of the
flat cache); slot -1, past num_slots or past topk_length is not attended and never read.
"""
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    async_copy, fence_async_shared, mbarrier, warpgroup_mma, warpgroup_mma_wait)

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
def _issue_gather(kv, stride_row, num_slots, slot_n, slot_r, kn_buf, kr_buf,
                  D_NOPE: gl.constexpr, D_ROPE: gl.constexpr, GN: gl.constexpr, GR: gl.constexpr):
    """cp.async one tile's rows into a ring stage; rows of invalid slots are zero-filled, not read.
    The slot ids come in both gather layouts (slot_n, slot_r), loaded so, not converted."""
    ok = (slot_n >= 0) & (slot_n < num_slots)
    row = gl.where(ok, slot_n, 0).to(gl.int64) * stride_row
    cols = gl.arange(0, D_NOPE, layout=gl.SliceLayout(0, GN))
    _cp_async(kn_buf, kv + row[:, None] + cols[None, :], mask=ok[:, None])
    if D_ROPE > 0:
        ok_r = (slot_r >= 0) & (slot_r < num_slots)
        row_r = gl.where(ok_r, slot_r, 0).to(gl.int64) * stride_row
        cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))
        _cp_async(kr_buf, kv + row_r[:, None] + cols_r[None, :], mask=ok_r[:, None])


@gluon.jit
def _gather_at(kv, stride_row, num_slots, idx_row, lo_tile, hi, kn_buf, kr_buf,
               BLOCK_N: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr,
               GN: gl.constexpr, GR: gl.constexpr):
    _issue_gather(kv, stride_row, num_slots, _load_slots(idx_row, lo_tile, hi, BLOCK_N, GN),
                  _load_slots(idx_row, lo_tile, hi, BLOCK_N, GR), kn_buf, kr_buf, D_NOPE, D_ROPE, GN, GR)


@gluon.jit
def _clock(x):
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [x], dtype=gl.int64, is_pure=False, pack=1)


@gluon.jit
def _scores(qn_smem, qr_smem, kn_buf, kr_buf, S_L: gl.constexpr, BLOCK_H: gl.constexpr,
            BLOCK_N: gl.constexpr, D_ROPE: gl.constexpr):
    s = gl.zeros([BLOCK_H, BLOCK_N], gl.float32, layout=S_L)
    s = warpgroup_mma(qn_smem, kn_buf.permute((1, 0)), s, use_acc=False, is_async=True)
    if D_ROPE > 0:
        s = warpgroup_mma(qr_smem, kr_buf.permute((1, 0)), s, is_async=True)
    return s


@gluon.jit
def _softmax(s, m_i, l_i, idx_row, lo_tile, hi, num_slots, score_scale,
             S_L: gl.constexpr, BLOCK_N: gl.constexpr):
    offs = lo_tile + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, S_L))
    slot = gl.load(idx_row + offs, mask=offs < hi, other=-1)
    ok = (slot >= 0) & (slot < num_slots)
    s = gl.where(ok[None, :], s * score_scale, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, axis=1))
    m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = gl.exp2(m_i - m_use)
    p = gl.exp2(s - m_use[:, None])
    l_i = l_i * alpha + gl.sum(p, axis=1)
    return p.to(gl.bfloat16), m_new, l_i, alpha


@gluon.jit
def _l2_prefetch(kv, stride_row, num_slots, idx_row, lo_tile, hi, BLOCK_N: gl.constexpr, ROW_BYTES: gl.constexpr,
                 num_warps: gl.constexpr):
    """prefetch.global.L2 every 128-byte line of the tile's rows: its later cp.async waits on L2."""
    PF: gl.constexpr = gl.BlockedLayout([1, 1], [2, 16], [num_warps, 1], [1, 0])
    offs = lo_tile + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, PF))
    slot = gl.load(idx_row + offs, mask=offs < hi, other=-1).to(gl.int64)
    ok = (slot >= 0) & (slot < num_slots)
    line = gl.minimum(gl.arange(0, 16, layout=gl.SliceLayout(0, PF)) * 64, ROW_BYTES // 2 - 1)
    ptrs = kv + (gl.where(ok, slot, 0) * stride_row)[:, None] + line[None, :]
    gl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [ptrs],
                              dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _loop_plain(kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, score_scale,
                qn_smem, qr_smem, kn_ring, kr_ring, p_smem, m_i, l_i, acc, prof,
                S_L: gl.constexpr, O_L: gl.constexpr, GN: gl.constexpr, GR: gl.constexpr,
                BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr,
                NUM_STAGES: gl.constexpr, L2_PREFETCH: gl.constexpr, IDX_PREFETCH: gl.constexpr,
                PROFILE: gl.constexpr):
    """Per tile: S, softmax, P.V in turn; the gather of tile j + NUM_STAGES - 1 is issued first.
    IDX_PREFETCH: that gather's slot ids were loaded an iteration earlier (off its critical path).
    PROFILE: clock64 time per phase, summed over tiles, into prof[0:6] (one program's view)."""
    LA: gl.constexpr = NUM_STAGES - 1  # tiles in flight ahead of the one computed
    sn = _load_slots(idx_row, lo + LA * BLOCK_N, hi, BLOCK_N, GN)
    sr = _load_slots(idx_row, lo + LA * BLOCK_N, hi, BLOCK_N, GR)
    t_issue = gl.to_tensor(0).to(gl.int64)
    t_wait = gl.to_tensor(0).to(gl.int64)
    t_s = gl.to_tensor(0).to(gl.int64)
    t_soft = gl.to_tensor(0).to(gl.int64)
    t_p = gl.to_tensor(0).to(gl.int64)
    t_pv = gl.to_tensor(0).to(gl.int64)
    for j in range(n_tiles):
        stage = j % NUM_STAGES
        if PROFILE:
            c0 = _clock(j)
        # Into the stage of tile j - 1, freed by the barrier that ended the last iteration.
        if IDX_PREFETCH:
            _issue_gather(kv, stride_row, num_slots, sn, sr, kn_ring.index((j + LA) % NUM_STAGES),
                          kr_ring.index((j + LA) % NUM_STAGES), D_NOPE, D_ROPE, GN, GR)
            async_copy.commit_group()
            sn = _load_slots(idx_row, lo + (j + LA + 1) * BLOCK_N, hi, BLOCK_N, GN)
            sr = _load_slots(idx_row, lo + (j + LA + 1) * BLOCK_N, hi, BLOCK_N, GR)
        else:
            _gather_at(kv, stride_row, num_slots, idx_row, lo + (j + LA) * BLOCK_N, hi,
                       kn_ring.index((j + LA) % NUM_STAGES), kr_ring.index((j + LA) % NUM_STAGES),
                       BLOCK_N, D_NOPE, D_ROPE, GN, GR)
            async_copy.commit_group()
        if L2_PREFETCH > 0:
            _l2_prefetch(kv, stride_row, num_slots, idx_row, lo + (j + LA + L2_PREFETCH) * BLOCK_N, hi,
                         BLOCK_N, 2 * (D_NOPE + D_ROPE), 8)
        if PROFILE:
            c1 = _clock(j)
            t_issue += c1 - c0
        async_copy.wait_group(NUM_STAGES - 1)  # tile j is in
        fence_async_shared()
        _cta_barrier()
        if PROFILE:
            c2 = _clock(j)
            t_wait += c2 - c1
        s = _scores(qn_smem, qr_smem, kn_ring.index(stage), kr_ring.index(stage), S_L, BLOCK_H, BLOCK_N, D_ROPE)
        s = warpgroup_mma_wait(0, deps=[s])
        if PROFILE:
            c3 = _clock(j)
            t_s += c3 - c2
        p, m_i, l_i, alpha = _softmax(s, m_i, l_i, idx_row, lo + j * BLOCK_N, hi, num_slots, score_scale, S_L, BLOCK_N)
        if PROFILE:
            c4 = _clock(j)
            t_soft += c4 - c3
        p_smem.store(p)
        fence_async_shared()
        _cta_barrier()
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, O_L))[:, None]
        if PROFILE:
            c5 = _clock(j)
            t_p += c5 - c4
        acc = warpgroup_mma(p_smem, kn_ring.index(stage), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        _cta_barrier()  # both warp groups are done with stage j and P(j)
        if PROFILE:
            t_pv += _clock(j) - c5
    async_copy.wait_group(0)
    if PROFILE:
        gl.store(prof + 0, t_issue)
        gl.store(prof + 1, t_wait)
        gl.store(prof + 2, t_s)
        gl.store(prof + 3, t_soft)
        gl.store(prof + 4, t_p)
        gl.store(prof + 5, t_pv)
    return acc, m_i, l_i


@gluon.jit
def _loop_overlap(kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, score_scale,
                  qn_smem, qr_smem, kn_ring, kr_ring, p_smem, m_i, l_i, acc,
                  S_L: gl.constexpr, O_L: gl.constexpr, GN: gl.constexpr, GR: gl.constexpr,
                  BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr,
                  NUM_STAGES: gl.constexpr, L2_PREFETCH: gl.constexpr):
    """FA3's in-warp-group overlap: S(j+1) and P(j).V(j) in flight together, softmax(j+1)
    while P(j).V(j) runs. Tile j+1 must be in before P(j).V(j) frees its stage, so the gather
    lookahead is NUM_STAGES - 2 tiles: for NUM_STAGES >= 3."""
    if n_tiles > 0:
        _gather_at(kv, stride_row, num_slots, idx_row, lo + (NUM_STAGES - 1) * BLOCK_N, hi,
                      kn_ring.index(NUM_STAGES - 1), kr_ring.index(NUM_STAGES - 1),
                      BLOCK_N, D_NOPE, D_ROPE, GN, GR)
        async_copy.commit_group()
        async_copy.wait_group(NUM_STAGES - 1)  # tile 0 is in
        fence_async_shared()
        _cta_barrier()
        s = _scores(qn_smem, qr_smem, kn_ring.index(0), kr_ring.index(0), S_L, BLOCK_H, BLOCK_N, D_ROPE)
        s = warpgroup_mma_wait(0, deps=[s])
        p, m_i, l_i, alpha = _softmax(s, m_i, l_i, idx_row, lo, hi, num_slots, score_scale, S_L, BLOCK_N)
        p_smem.store(p)
        fence_async_shared()
        _cta_barrier()
        for j in range(n_tiles):
            # Unconditional: past the last tile, tile j+1's stage holds a masked (zero-filled)
            # gather whose scores are all -inf, so its softmax changes nothing.
            stage = j % NUM_STAGES
            nxt = (j + 1) % NUM_STAGES
            async_copy.wait_group(NUM_STAGES - 2)  # tile j+1 is in
            fence_async_shared()
            _cta_barrier()
            s = _scores(qn_smem, qr_smem, kn_ring.index(nxt), kr_ring.index(nxt), S_L, BLOCK_H, BLOCK_N, D_ROPE)
            acc = warpgroup_mma(p_smem, kn_ring.index(stage), acc, is_async=True)
            s = warpgroup_mma_wait(1, deps=[s])
            p, m_i, l_i, alpha = _softmax(s, m_i, l_i, idx_row, lo + (j + 1) * BLOCK_N, hi, num_slots,
                                          score_scale, S_L, BLOCK_N)
            acc = warpgroup_mma_wait(0, deps=[acc])
            _cta_barrier()  # both warp groups are done with stage j and P(j)
            _gather_at(kv, stride_row, num_slots, idx_row, lo + (j + NUM_STAGES) * BLOCK_N, hi,
                          kn_ring.index(stage), kr_ring.index(stage), BLOCK_N, D_NOPE, D_ROPE, GN, GR)
            async_copy.commit_group()
            if L2_PREFETCH > 0:
                _l2_prefetch(kv, stride_row, num_slots, idx_row, lo + (j + NUM_STAGES + L2_PREFETCH) * BLOCK_N, hi,
                             BLOCK_N, 2 * (D_NOPE + D_ROPE), 8)
            p_smem.store(p)
            fence_async_shared()
            _cta_barrier()
            acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, O_L))[:, None]
        async_copy.wait_group(0)
    return acc, m_i, l_i


@gluon.jit
def _epilogue(acc, m_i, l_i, sink, out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part,
              t, hb, split, num_heads, num_splits, O_L: gl.constexpr, BLOCK_H: gl.constexpr,
              D_NOPE: gl.constexpr, HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr):
    LOG2E: gl.constexpr = 1.4426950408889634
    # Epilogue: rows with nothing attended write 0 (and LSE +inf); splits write partials.
    heads_o = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, O_L))
    hm_o = heads_o < num_heads
    cols_o = gl.arange(0, D_NOPE, layout=gl.SliceLayout(0, O_L))
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, O_L))
    m_o = gl.convert_layout(m_i, gl.SliceLayout(1, O_L))
    m_use = gl.where(m_o == float("-inf"), 0.0, m_o)
    if SPLIT_K:
        inv = gl.where(l_o > 0.0, 1.0 / gl.where(l_o > 0.0, l_o, 1.0), 0.0)
        part = (t * num_heads + heads_o) * num_splits + split
        lse2 = gl.where(l_o > 0.0, m_o + gl.log2(gl.where(l_o > 0.0, l_o, 1.0)), float("-inf"))
        gl.store(lse_part + part, lse2, mask=hm_o)
        gl.store(o_part + part[:, None] * D_NOPE + cols_o[None, :], acc * inv[:, None], mask=hm_o[:, None])
    else:
        denom = l_o
        if HAS_SINK:
            sink_h = gl.load(sink + heads_o, mask=hm_o, other=float("-inf")).to(gl.float32)
            denom = denom + gl.exp2(sink_h * LOG2E - m_use)
        inv = gl.where(l_o > 0.0, 1.0 / gl.where(l_o > 0.0, denom, 1.0), 0.0)
        o_row = out + t * stride_ot + heads_o.to(gl.int64) * stride_oh
        gl.store(o_row[:, None] + cols_o[None, :], (acc * inv[:, None]).to(out.dtype.element_ty), mask=hm_o[:, None])
        if RETURN_LSE:
            lse_val = gl.where(l_o > 0.0, (m_use + gl.log2(gl.where(l_o > 0.0, l_o, 1.0))) * 0.6931471805599453,
                               float("inf"))
            gl.store(lse + t * stride_lt + heads_o, lse_val, mask=hm_o)


@gluon.jit
def sparse_mla_sm90_bf16(
    q, stride_qt, stride_qh,
    kv, stride_row, num_slots,
    idx, stride_it, topk_len,
    sink,
    out, stride_ot, stride_oh,
    lse, stride_lt,
    o_part, lse_part, prof,
    sm_scale, num_heads, num_splits,
    TOPK: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr,
    HAS_TOPK_LEN: gl.constexpr, HAS_SINK: gl.constexpr, RETURN_LSE: gl.constexpr, SPLIT_K: gl.constexpr,
    BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, NUM_STAGES: gl.constexpr, OVERLAP: gl.constexpr,
    L2_PREFETCH: gl.constexpr, IDX_PREFETCH: gl.constexpr, PROFILE: gl.constexpr, num_warps: gl.constexpr,
):
    gl.static_assert(num_warps == 8)
    pid = gl.program_id(0)
    head_blocks = gl.cdiv(num_heads, BLOCK_H)
    hb = pid % head_blocks
    split = (pid // head_blocks) % num_splits
    t = (pid // head_blocks // num_splits).to(gl.int64)

    # Layouts. S: warps [4, 2] split the tile's columns between the warp groups; O: the 512
    # output columns, 256 per warp group. Gathers: 16-byte cp.async per thread.
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                  instr_shape=[16, BLOCK_N // 2, 16])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                  instr_shape=[16, D_NOPE // 2, 16])
    GN: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    GR: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
    SW_N: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    SW_R: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    SW_P: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=min(128, 2 * BLOCK_N), element_bitwidth=16, rank=2)

    qn_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_NOPE], SW_N)
    kn_ring = gl.allocate_shared_memory(gl.bfloat16, [NUM_STAGES, BLOCK_N, D_NOPE], SW_N)
    if D_ROPE > 0:
        qr_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_ROPE], SW_R)
        kr_ring = gl.allocate_shared_memory(gl.bfloat16, [NUM_STAGES, BLOCK_N, D_ROPE], SW_R)
    else:
        qr_smem = qn_smem
        kr_ring = kn_ring
    p_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, BLOCK_N], SW_P)

    # This split's share of the top-k list, in whole tiles.
    chunk = gl.cdiv(gl.cdiv(TOPK, num_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = gl.minimum(lo + chunk, TOPK)
    if HAS_TOPK_LEN:
        hi = gl.minimum(hi, gl.load(topk_len + t))
    n_tiles = gl.maximum(gl.cdiv(hi - lo, BLOCK_N), 0)
    idx_row = idx + t * stride_it

    # Gathers of the first NUM_STAGES - 1 tiles, then Q (registers -> shared memory).
    for i in gl.static_range(NUM_STAGES - 1):
        _gather_at(kv, stride_row, num_slots, idx_row, lo + i * BLOCK_N, hi, kn_ring.index(i),
                      kr_ring.index(i), BLOCK_N, D_NOPE, D_ROPE, GN, GR)
        async_copy.commit_group()
    heads_q = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GN))
    q_row = q + t * stride_qt + heads_q.to(gl.int64) * stride_qh
    hm = heads_q < num_heads
    qn_smem.store(gl.load(q_row[:, None] + gl.arange(0, D_NOPE, layout=gl.SliceLayout(0, GN))[None, :],
                          mask=hm[:, None], other=0.0))
    if D_ROPE > 0:
        heads_r = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GR))
        q_row_r = q + t * stride_qt + heads_r.to(gl.int64) * stride_qh
        qr_smem.store(gl.load(q_row_r[:, None] + D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))[None, :],
                              mask=(heads_r < num_heads)[:, None], other=0.0))

    LOG2E: gl.constexpr = 1.4426950408889634
    score_scale = sm_scale * LOG2E
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=gl.SliceLayout(1, S_L))
    l_i = gl.zeros([BLOCK_H], gl.float32, layout=gl.SliceLayout(1, S_L))
    acc = gl.zeros([BLOCK_H, D_NOPE], gl.float32, layout=O_L)

    if OVERLAP:
        acc, m_i, l_i = _loop_overlap(kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, score_scale,
                                      qn_smem, qr_smem, kn_ring, kr_ring, p_smem, m_i, l_i, acc,
                                      S_L, O_L, GN, GR, BLOCK_H, BLOCK_N, D_NOPE, D_ROPE, NUM_STAGES, L2_PREFETCH)
    else:
        acc, m_i, l_i = _loop_plain(kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, score_scale,
                                    qn_smem, qr_smem, kn_ring, kr_ring, p_smem, m_i, l_i, acc, prof + pid * 8,
                                    S_L, O_L, GN, GR, BLOCK_H, BLOCK_N, D_NOPE, D_ROPE, NUM_STAGES, L2_PREFETCH,
                                    IDX_PREFETCH, PROFILE)

    _epilogue(acc, m_i, l_i, sink, out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part,
              t, hb, split, num_heads, num_splits, O_L, BLOCK_H, D_NOPE, HAS_SINK, RETURN_LSE, SPLIT_K)

@gluon.jit
def _producer(kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, kn_ring, kr_ring, ready, free,
              BLOCK_N: gl.constexpr, D_NOPE: gl.constexpr, D_ROPE: gl.constexpr, NUM_STAGES: gl.constexpr,
              CW: gl.constexpr):
    """The gathering warp group: tile j into stage j % NUM_STAGES once the consumers freed it,
    CW columns at a time (bounded registers); each thread's cp.asyncs arrive on ready[stage]."""
    GC: gl.constexpr = gl.BlockedLayout([1, 8], [32 * 8 // CW, CW // 8], [4, 1], [1, 0])
    GR: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    for j in range(n_tiles):
        stage = j % NUM_STAGES
        mbarrier.wait(free.index(stage), ((j // NUM_STAGES) & 1) ^ 1, pred=j >= NUM_STAGES)
        slot = _load_slots(idx_row, lo + j * BLOCK_N, hi, BLOCK_N, GC)
        ok = (slot >= 0) & (slot < num_slots)
        row = gl.where(ok, slot, 0).to(gl.int64) * stride_row
        kn_buf = kn_ring.index(stage)
        for c in gl.static_range(D_NOPE // CW):
            cols = c * CW + gl.arange(0, CW, layout=gl.SliceLayout(0, GC))
            _cp_async(kn_buf.slice(c * CW, CW, dim=1), kv + row[:, None] + cols[None, :], mask=ok[:, None])
        if D_ROPE > 0:
            slot_r = _load_slots(idx_row, lo + j * BLOCK_N, hi, BLOCK_N, GR)
            ok_r = (slot_r >= 0) & (slot_r < num_slots)
            row_r = gl.where(ok_r, slot_r, 0).to(gl.int64) * stride_row
            cols_r = D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))
            _cp_async(kr_ring.index(stage), kv + row_r[:, None] + cols_r[None, :], mask=ok_r[:, None])
        async_copy.mbarrier_arrive(ready.index(stage), increment_count=False)


@gluon.jit
def _consumer(qn_smem, qr_smem, kn_ring, kr_ring, p_smem, ready, free, idx_row, lo, hi, n_tiles,
              num_slots, score_scale,
              S_L: gl.constexpr, O_L: gl.constexpr, BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr,
              D_NOPE: gl.constexpr, D_ROPE: gl.constexpr, NUM_STAGES: gl.constexpr):
    """The two computing warp groups: S, softmax, P.V per tile, as in _loop_plain, with the
    gathers left to the producer."""
    m_i = gl.full([BLOCK_H], float("-inf"), gl.float32, layout=gl.SliceLayout(1, S_L))
    l_i = gl.zeros([BLOCK_H], gl.float32, layout=gl.SliceLayout(1, S_L))
    acc = gl.zeros([BLOCK_H, D_NOPE], gl.float32, layout=O_L)
    for j in range(n_tiles):
        stage = j % NUM_STAGES
        mbarrier.wait(ready.index(stage), (j // NUM_STAGES) & 1)
        fence_async_shared()  # the cp.async writes, before the wgmma (async proxy) reads them
        s = _scores(qn_smem, qr_smem, kn_ring.index(stage), kr_ring.index(stage), S_L, BLOCK_H, BLOCK_N, D_ROPE)
        s = warpgroup_mma_wait(0, deps=[s])
        p, m_i, l_i, alpha = _softmax(s, m_i, l_i, idx_row, lo + j * BLOCK_N, hi, num_slots, score_scale, S_L, BLOCK_N)
        p_smem.store(p)
        fence_async_shared()
        _cta_barrier()
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, O_L))[:, None]
        acc = warpgroup_mma(p_smem, kn_ring.index(stage), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=[acc])
        _cta_barrier()  # both warp groups are done with the stage and with P
        mbarrier.arrive(free.index(stage))
    return acc, m_i, l_i


@gluon.jit
def sparse_mla_sm90_bf16_wsp(
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
    BLOCK_H: gl.constexpr, BLOCK_N: gl.constexpr, NUM_STAGES: gl.constexpr, PRODUCER_REGS: gl.constexpr,
    num_warps: gl.constexpr,
):
    """sparse_mla_sm90_bf16 with a producer warp group (warp-specialized) doing the gathers."""
    gl.static_assert(num_warps == 8)
    gl.static_assert(D_ROPE > 0)
    pid = gl.program_id(0)
    head_blocks = gl.cdiv(num_heads, BLOCK_H)
    hb = pid % head_blocks
    split = (pid // head_blocks) % num_splits
    t = (pid // head_blocks // num_splits).to(gl.int64)
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                  instr_shape=[16, BLOCK_N // 2, 16])
    O_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2],
                                                  instr_shape=[16, D_NOPE // 2, 16])
    GQ: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [num_warps, 1], [1, 0])
    GR: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    SW_P: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=min(128, 2 * BLOCK_N), element_bitwidth=16, rank=2)
    qn_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_NOPE], SW)
    qr_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, D_ROPE], SW)
    kn_ring = gl.allocate_shared_memory(gl.bfloat16, [NUM_STAGES, BLOCK_N, D_NOPE], SW)
    kr_ring = gl.allocate_shared_memory(gl.bfloat16, [NUM_STAGES, BLOCK_N, D_ROPE], SW)
    p_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_H, BLOCK_N], SW_P)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    free = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(ready.index(i), count=128)  # one cp.async arrive per producer thread
        mbarrier.init(free.index(i), count=1)

    chunk = gl.cdiv(gl.cdiv(TOPK, num_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = gl.minimum(lo + chunk, TOPK)
    if HAS_TOPK_LEN:
        hi = gl.minimum(hi, gl.load(topk_len + t))
    n_tiles = gl.maximum(gl.cdiv(hi - lo, BLOCK_N), 0)
    idx_row = idx + t * stride_it

    heads_q = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GQ))
    q_row = q + t * stride_qt + heads_q.to(gl.int64) * stride_qh
    for c in gl.static_range(D_NOPE // 128):
        qn_smem.slice(c * 128, 128, dim=1).store(
            gl.load(q_row[:, None] + c * 128 + gl.arange(0, 128, layout=gl.SliceLayout(0, GQ))[None, :],
                    mask=(heads_q < num_heads)[:, None], other=0.0))
    heads_r = hb * BLOCK_H + gl.arange(0, BLOCK_H, layout=gl.SliceLayout(1, GR))
    q_row_r = q + t * stride_qt + heads_r.to(gl.int64) * stride_qh
    qr_smem.store(gl.load(q_row_r[:, None] + D_NOPE + gl.arange(0, D_ROPE, layout=gl.SliceLayout(0, GR))[None, :],
                          mask=(heads_r < num_heads)[:, None], other=0.0))
    fence_async_shared()
    _cta_barrier()
    score_scale = sm_scale * 1.4426950408889634

    acc, m_i, l_i = gl.warp_specialize([
        (_consumer, (qn_smem, qr_smem, kn_ring, kr_ring, p_smem, ready, free, idx_row, lo, hi, n_tiles,
                     num_slots, score_scale, S_L, O_L, BLOCK_H, BLOCK_N, D_NOPE, D_ROPE, NUM_STAGES)),
        (_producer, (kv, stride_row, num_slots, idx_row, lo, hi, n_tiles, kn_ring, kr_ring, ready, free,
                     BLOCK_N, D_NOPE, D_ROPE, NUM_STAGES, 64)),
    ], [4], [PRODUCER_REGS])

    _epilogue(acc, m_i, l_i, sink, out, stride_ot, stride_oh, lse, stride_lt, o_part, lse_part,
              t, hb, split, num_heads, num_splits, O_L, BLOCK_H, D_NOPE, HAS_SINK, RETURN_LSE, SPLIT_K)
