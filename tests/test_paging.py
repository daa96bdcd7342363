"""Page and index kernels (convert_indices, pack_valid_prefix, page_split) under Triton's
interpreter, against the PyTorch references and against independent per-element checks."""
import dataclasses
import os

os.environ["TRITON_INTERPRET"] = "1"

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.gen.layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES, model1_page_bytes  # noqa: E402
from sparsemla.gen.paging import (ConvertIndicesSpec, PackValidPrefixSpec, PagingConfig, PageSplitSpec,  # noqa: E402
                                  PageSplitTma)
from sparsemla.runtime import paging  # noqa: E402
from sparsemla.runtime.paging import (convert_indices_reference, pack_valid_prefix_reference,  # noqa: E402
                                      page_split_reference)

DATA, SCALE = M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES
SENTINEL = 0xA5


def _ints(gen, lo, hi, shape):
    return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int32)


def _convert_loop(req, table, local, page_size, stride, compact):
    """Element by element, straight from the definition."""
    T, K = local.shape
    R, MB = table.shape
    out = torch.full((T, K), -1, dtype=torch.int32)
    counts = torch.zeros(T, dtype=torch.int32)
    for t in range(T):
        vals = []
        for k in range(K):
            pos, r = int(local[t, k]), int(req[t])
            v = -1
            if pos >= 0 and 0 <= r < R and pos // page_size < MB:
                blk = int(table[r, pos // page_size])
                if blk >= 0:
                    v = blk * stride + pos % page_size
            vals.append(v)
        if compact:
            valid = [v for v in vals if v >= 0]
            counts[t] = len(valid)
            vals = valid + [-1] * (K - len(valid))
        out[t] = torch.tensor(vals, dtype=torch.int32)
    return (out, counts) if compact else out


def _random_convert_problem(gen, T, K, R, MB, page_size):
    req = _ints(gen, 0, R, (T,))
    req[0] = R  # a request id past the table: the whole row is -1
    table = _ints(gen, 0, 10_000, (R, MB))
    table[table % 7 == 0] = -1  # unassigned blocks
    local = _ints(gen, -1, MB * page_size + 3 * page_size, (T, K))  # some blocks past the table
    local[1] = -1  # an all-invalid row
    return req, table, local


@pytest.mark.parametrize("page_size,compact,stride", [(1, False, None), (16, True, None), (64, False, 80),
                                                      (64, True, 96), (128, True, None)])
def test_convert_indices_matches_definition(page_size, compact, stride):
    gen = torch.Generator().manual_seed(1000 + page_size + compact)
    T, K, R, MB = 6, 200, 3, 5
    req, table, local = _random_convert_problem(gen, T, K, R, MB, page_size)
    got = sparsemla.convert_indices(req, table, local, page_size=page_size, block_stride_rows=stride,
                                    return_valid_counts=compact)
    want = _convert_loop(req, table, local, page_size, stride or page_size, compact)
    ref = convert_indices_reference(req, table, local, page_size=page_size, block_stride_rows=stride,
                                    return_valid_counts=compact)
    for g, w, r in zip(*(x if compact else (x,) for x in (got, want, ref))):
        assert g.dtype == torch.int32
        assert torch.equal(g, w)
        assert torch.equal(r, w)
    if compact:
        assert got[1][0] == 0 and got[1][1] == 0  # request past the table, all -1 row
        assert (got[0][1] == -1).all()


@pytest.mark.parametrize("K,block", [(1, None), (256, None), (256, 256), (700, 1024), (130, 64)])
def test_convert_indices_compact_widths(K, block):
    # One pass when the row fits the block (topk below, equal to or a power of two under it), chunks
    # and a fill pass when it does not.
    gen = torch.Generator().manual_seed(K)
    T, R, MB, ps = 5, 3, 4, 64
    req, table, local = _random_convert_problem(gen, T, K, R, MB, ps)
    cfg = None if block is None else PagingConfig(block, 4)
    got, n = paging.convert_indices(req, table, local, page_size=ps, return_valid_counts=True, config=cfg)
    want, want_n = _convert_loop(req, table, local, ps, ps, True)
    assert torch.equal(got, want) and torch.equal(n, want_n)


def test_convert_indices_cases_by_hand():
    table = torch.tensor([[5, -1, 7], [2, 3, 4]], dtype=torch.int32)
    req = torch.tensor([0, 1, 1, 0], dtype=torch.int32)
    local = torch.tensor([[0, 5, 4, 9, 12, -1],    # 4..7: block id -1; 12: block 3 past the table
                          [11, -1, 0, 8, 3, 4],
                          [-1, -1, -1, -1, -1, -1],
                          [10, 1, -1, 13, 8, 2]], dtype=torch.int32)
    got, n = sparsemla.convert_indices(req, table, local, page_size=4, return_valid_counts=True)
    assert got.tolist() == [[20, 29, -1, -1, -1, -1],
                            [19, 8, 16, 11, 12, -1],
                            [-1] * 6,
                            [30, 21, 28, 22, -1, -1]]
    assert n.tolist() == [2, 5, 0, 4]
    plain = sparsemla.convert_indices(req, table, local, page_size=4, block_stride_rows=10)
    assert plain[0].tolist() == [50, -1, -1, 71, -1, -1]
    assert plain[1].tolist() == [43, -1, 20, 40, 23, 30]


def test_convert_indices_non_contiguous_and_chunked():
    gen = torch.Generator().manual_seed(7)
    T, K, R, MB, ps = 4, 300, 2, 6, 16
    req, table, local = _random_convert_problem(gen, T, K, R, MB, ps)
    local_nc = local.t().contiguous().t()  # column-major view
    table_nc = torch.stack([table, -table], 2)[:, :, 0]  # strided columns
    assert not local_nc.is_contiguous() and not table_nc.is_contiguous()
    for compact in (False, True):
        got = paging.convert_indices(req, table_nc, local_nc, page_size=ps, return_valid_counts=compact,
                                     config=PagingConfig(block=64, num_warps=2))  # several chunks per row
        want = _convert_loop(req, table, local, ps, ps, compact)
        for g, w in zip(*(x if compact else (x,) for x in (got, want))):
            assert torch.equal(g, w)


def test_pack_valid_prefix_uneven_lengths():
    gen = torch.Generator().manual_seed(11)
    T, W = 7, 150
    slots = _ints(gen, -1, 5000, (T, W))
    lens = torch.tensor([0, 1, 149, 150, 170, 37, 0])  # 170 > W: only W entries are written
    indptr = torch.zeros(T + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(lens, 0)
    got = sparsemla.pack_valid_prefix(slots, indptr)
    assert got.shape == (int(lens.sum()),) and got.dtype == torch.int32
    want = torch.zeros(int(lens.sum()), dtype=torch.int32)
    for t in range(T):
        n = min(int(lens[t]), W)
        want[int(indptr[t]):int(indptr[t]) + n] = slots[t, :n].clamp(min=0)
    assert torch.equal(got, want)
    assert torch.equal(pack_valid_prefix_reference(slots, indptr), want)
    # Preallocated: entries no row writes keep their bytes, stores past the end are dropped.
    out = torch.full((int(lens.sum()) - 10,), -7, dtype=torch.int32)
    paging.pack_valid_prefix(slots, indptr, out=out, config=PagingConfig(block=64, num_warps=2))
    keep = torch.ones(out.numel(), dtype=torch.bool)
    keep[int(indptr[4]) + W:int(indptr[5])] = False  # the row of 170 writes only its first W
    assert torch.equal(out[keep], want[:out.numel()][keep])
    assert (out[~keep] == -7).all()
    # Non-contiguous slots.
    slots_nc = slots.t().contiguous().t()
    assert torch.equal(sparsemla.pack_valid_prefix(slots_nc, indptr), want)


def _pool(gen, n_pages, page_size):
    return torch.randint(0, 256, (n_pages, model1_page_bytes(page_size)), generator=gen, dtype=torch.uint8)


def _check_split_tokens(src, dst, P, tokens, D=64):
    """Token s's data and scale rows are in destination page s // D at offset s % D."""
    for s in tokens:
        sp, so, dp, do = s // P, s % P, s // D, s % D
        assert torch.equal(dst[dp, do * DATA:(do + 1) * DATA], src[sp, so * DATA:(so + 1) * DATA]), s
        a = D * DATA + do * SCALE
        b = P * DATA + so * SCALE
        assert torch.equal(dst[dp, a:a + SCALE], src[sp, b:b + SCALE]), s


@pytest.mark.parametrize("P", [128, 256, 512])
def test_page_split_all_pages(P):
    gen = torch.Generator().manual_seed(P)
    N = 3
    src = _pool(gen, N, P)
    out = torch.full((N * P // 64, model1_page_bytes(64)), SENTINEL, dtype=torch.uint8)
    got = sparsemla.page_split(src, src_page_size=P, out=out)
    assert got is out
    _check_split_tokens(src, got, P, range(0, N * P, 7))
    pad = 64 * (DATA + SCALE)
    assert (got[:, pad:] == SENTINEL).all()  # padding is never written
    want = page_split_reference(src, src_page_size=P, out=torch.full_like(out, SENTINEL))
    assert torch.equal(got, want)


def test_page_split_identity():
    src = _pool(torch.Generator().manual_seed(1), 2, 64)
    assert sparsemla.page_split(src, src_page_size=64) is src
    assert sparsemla.page_split(src, src_page_size=64, dst_page_size=64, touched_indices=src[:1, :1].int()) is src


@pytest.mark.parametrize("P,dtype", [(256, torch.int32), (512, torch.int64)])
def test_page_split_touched_pages_only(P, dtype):
    gen = torch.Generator().manual_seed(P + 5)
    N, D = 5, 64
    src = _pool(gen, N, P)
    touched_pages = [1, 3]
    tok = torch.tensor([[1 * P + 3, -1, 3 * P + P - 1], [-1, -1, 1 * P + 200 % P]], dtype=dtype)
    tok = torch.cat([tok, torch.tensor([[N * P + 5, -1, -7]], dtype=dtype)])  # past the pool / negative: ignored
    out = torch.full((N * P // D, model1_page_bytes(D)), SENTINEL, dtype=torch.uint8)
    got = sparsemla.page_split(src, src_page_size=P, touched_indices=tok.t(), out=out)  # any shape, strided
    full = page_split_reference(src, src_page_size=P, out=torch.full_like(out, SENTINEL))
    ratio = P // D
    for n in range(N):
        rows = slice(n * ratio, (n + 1) * ratio)
        if n in touched_pages:
            assert torch.equal(got[rows], full[rows]), n
        else:
            assert (got[rows] == SENTINEL).all(), n
    ref = page_split_reference(src, src_page_size=P, touched_indices=tok, out=torch.full_like(out, SENTINEL))
    assert torch.equal(got, ref)
    # No valid token: nothing is written.
    none = torch.full_like(out, SENTINEL)
    sparsemla.page_split(src, src_page_size=P, touched_indices=torch.full((4,), -1, dtype=dtype), out=none)
    assert (none == SENTINEL).all()


def _touched_problem(gen, N, P, pages, per_page=7, dtype=torch.int32):
    """Token ids of ``pages`` (each several times), shuffled with -1 and out-of-pool ids, as a
    strided [k, 3] view."""
    ids = [p * P + int(o) for p in pages for o in torch.randint(0, P, (per_page,), generator=gen)]
    ids += [N * P, N * P + 3, -5] + [-1] * (9 + (-len(ids) - 3) % 3)
    tok = torch.tensor(ids, dtype=dtype)
    return tok[torch.randperm(tok.numel(), generator=gen)].view(3, -1).t()


def _check_touched(src, got, P, pages, D=64):
    full = page_split_reference(src, src_page_size=P)
    ratio = P // D
    for n in range(src.shape[0]):
        rows = slice(n * ratio, (n + 1) * ratio)
        if n in pages:
            assert torch.equal(got[rows, :D * (DATA + SCALE)], full[rows, :D * (DATA + SCALE)]), n
            assert (got[rows, D * (DATA + SCALE):] == SENTINEL).all(), n  # padding is never written
        else:
            assert (got[rows] == SENTINEL).all(), n


@pytest.mark.parametrize("P,config", [(256, None), (256, PagingConfig(512, 2, programs_per_sm=1)),
                                      (512, PagingConfig(512, 4, programs_per_sm=3)), (128, None),
                                      (256, PagingConfig(mark_dedup=True)),
                                      (512, PagingConfig(512, 4, programs_per_sm=2, mark_dedup=True)),
                                      (256, PagingConfig(mark_copies=4)),
                                      (128, PagingConfig(mark_dedup=True, mark_copies=2)),
                                      (256, PagingConfig(mark_check=True, mark_copies=2)),
                                      (256, PagingConfig(mark_spacing=32, mark_copies=2)),
                                      (128, PagingConfig(mark_spacing=32, mark_dedup=True)),
                                      (256, PagingConfig(chunks=8, programs_per_sm=5)),
                                      (128, PagingConfig(chunks=1, programs_per_sm=1, mark_check=True)),
                                      (256, PagingConfig(mark_claim=True, programs_per_sm=3)),
                                      (512, PagingConfig(mark_claim=True, chunks=16, programs_per_sm=2)),
                                      (256, PagingConfig(lead_split=2)),
                                      (512, PagingConfig(lead_split=4, mark_copies=2, mark_spacing=128)),
                                      (128, PagingConfig(lead_split=64, mark_check=True, chunks=4)),
                                      # (the TMA copy runs on an sm90+ GPU; here the list copy stands in)
                                      (256, PagingConfig(tma_stages=3)),
                                      (128, PagingConfig(tma_stages=2, mark_claim=True)),
                                      (512, PagingConfig(lead_split=4, tma_stages=6))])
def test_page_split_touched_list_strides_and_resets(P, config):
    # More destination pages than programs: each program strides over the list; duplicates,
    # -1 and ids past the pool list nothing twice; the device state is back to zero after a call,
    # so the next call (another set of pages) copies only its own pages.
    gen = torch.Generator().manual_seed(P + 77)
    N, D = 12, 64
    src = _pool(gen, N, P)
    shape = (N * P // D, model1_page_bytes(D))
    rest_listed = 0  # lead_split: pages first named after the lead share
    for pages in ([0, 5, 6, 11, 3, 9, 1], [2, 5], list(range(N)), [7]):
        tok = _touched_problem(gen, N, P, pages, dtype=torch.int64 if P == 512 else torch.int32)
        out = torch.full(shape, SENTINEL, dtype=torch.uint8)
        got = paging.page_split(src, src_page_size=P, touched_indices=tok, out=out, config=config)
        assert got is out
        _check_touched(src, got, P, pages)
        assert torch.equal(got, page_split_reference(src, src_page_size=P, touched_indices=tok,
                                                     out=torch.full(shape, SENTINEL, dtype=torch.uint8)))
        state = paging._list_buffers[src.device, 0]
        listed = state.pages[:int(state.count)].tolist()
        if config is not None and config.lead_split:  # the lead share's pages, then only new ones
            rest_listed += len(listed)
            listed += state.lead_pages[:int(state.lead_count)].tolist()
        assert sorted(listed) == sorted(pages), (listed, pages)  # each page listed once
        assert (state.marks == 0).all() and (state.claims == 0).all(), pages
    if config is not None and config.lead_split >= 4:
        assert rest_listed > 0  # the second list and copy ran on some call
    # No token at all (an empty tensor, or only -1): nothing is written.
    for tok in (torch.empty(0, dtype=torch.int32), torch.full((2, 5), -1, dtype=torch.int32)):
        out = torch.full(shape, SENTINEL, dtype=torch.uint8)
        paging.page_split(src, src_page_size=P, touched_indices=tok, out=out, config=config)
        assert (out == SENTINEL).all()


def test_a_replaced_page_state_stays_allocated_for_captured_graphs(monkeypatch):
    # A larger pool replaces the touched path's device state; a CUDA graph captured with the old one still
    # replays into its marks and lists, so it is kept (growth at least doubles) until release_retired_buffers.
    monkeypatch.setattr(paging, "_list_buffers", {})
    monkeypatch.setattr(paging, "_retired_lists", {})
    gen = torch.Generator().manual_seed(torch.seed())
    P = 256
    for N, pages in ((3, [0, 2]), (5, [1, 4]), (6, [5]), (40, [0, 39, 17])):
        src = _pool(gen, N, P)
        tok = _touched_problem(gen, N, P, pages)
        out = torch.full((N * P // 64, model1_page_bytes(64)), SENTINEL, dtype=torch.uint8)
        _check_touched(src, paging.page_split(src, src_page_size=P, touched_indices=tok, out=out), P, pages)
    retired = paging._retired_lists[src.device]
    assert [st.capacity for st in retired] == [3, 6]  # 5 pages -> 6 (doubled), 6 fit, 40 -> 40
    assert paging._list_buffers[src.device, 0].capacity == 40
    assert all((st.marks == 0).all() for st in retired)
    assert sparsemla.runtime.release_retired_buffers() >= sum(st.marks.numel() for st in retired)
    assert paging._retired_lists == {} and paging.release_retired_lists() == 0


def test_touched_calls_on_two_streams_or_in_a_fresh_capture_keep_their_own_state(monkeypatch):
    # Touched page_split calls on two streams of one device may run at once: each stream has its own marks
    # and lists. In a CUDA graph captured on a stream with no state, each call gets one of its own, zeroed in
    # the graph (a shared one allocated there would be zeroed only when that graph replays).
    monkeypatch.setattr(paging, "_list_buffers", {})
    gen = torch.Generator().manual_seed(torch.seed())
    P, N = 256, 5
    src = _pool(gen, N, P)
    stream = {"now": 1}
    monkeypatch.setattr(paging, "stream_key", lambda device: (device, stream["now"]))
    states = {}
    for now, pages in ((1, [0, 3]), (2, [4]), (1, [2]), (2, [1, 0])):
        stream["now"] = now
        tok = _touched_problem(gen, N, P, pages)
        out = torch.full((N * P // 64, model1_page_bytes(64)), SENTINEL, dtype=torch.uint8)
        _check_touched(src, paging.page_split(src, src_page_size=P, touched_indices=tok, out=out), P, pages)
        assert states.setdefault(now, paging.page_list_of(src.device)) is paging.page_list_of(src.device)
    assert states[1] is not states[2] and set(paging._list_buffers) == {(src.device, 1), (src.device, 2)}
    stream["now"] = 3
    monkeypatch.setattr(paging, "capturing", lambda device: True)
    for pages in ([1], [2, 4]):
        tok = _touched_problem(gen, N, P, pages)
        out = torch.full((N * P // 64, model1_page_bytes(64)), SENTINEL, dtype=torch.uint8)
        _check_touched(src, paging.page_split(src, src_page_size=P, touched_indices=tok, out=out), P, pages)
    assert paging.page_list_of(src.device) is None and len(paging._list_buffers) == 2


def test_release_buffers_drops_what_the_runtime_keeps_and_calls_prepare_again(monkeypatch):
    # sparsemla.runtime.release_buffers: every stream's split-K workspace, page_split's states and kept outputs,
    # and the prepared calls that hold them; the next calls allocate and prepare again.
    from sparsemla.gen.spec import Config
    from sparsemla.runtime import api, triton_backend
    for table in ("_workspaces", "_retired"):
        monkeypatch.setattr(triton_backend, table, {})
    for table in ("_list_buffers", "_retired_lists", "_split_buffers"):
        monkeypatch.setattr(paging, table, {})
    gen = torch.Generator().manual_seed(torch.seed())
    P, N = 256, 4
    src = _pool(gen, N, P)
    tok = _touched_problem(gen, N, P, [1, 3])
    q, kv = torch.randn(2, 16, 576, generator=gen).half(), torch.randn(64, 576, generator=gen).half()
    idx = torch.randint(0, 64, (2, 48), generator=gen, dtype=torch.int32)

    def calls():
        out = torch.full((N * P // 64, model1_page_bytes(64)), SENTINEL, dtype=torch.uint8)
        _check_touched(src, paging.page_split(src, src_page_size=P, touched_indices=tok, out=out), P, [1, 3])
        kept = paging.page_split(src, src_page_size=P)  # (a persistent output)
        assert torch.equal(kept, page_split_reference(src, src_page_size=P))
        return sparsemla.sparse_mla(q, kv, idx, sm_scale=0.04, backend="triton",
                                    config=Config(16, 16, 3, 4, 1))
    first = calls()
    assert triton_backend._workspaces and paging._list_buffers and paging._split_buffers and api._calls
    workspace = next(iter(triton_backend._workspaces.values()))
    assert sparsemla.runtime.release_buffers() >= workspace.numel() * 4 + model1_page_bytes(64) * N * 4
    assert not (triton_backend._workspaces or paging._list_buffers or paging._split_buffers or api._calls)
    assert torch.equal(calls(), first)
    assert triton_backend._workspaces and paging._list_buffers and api._calls


def test_page_split_default_takes_the_lead_path_only_from_lead_min_ids():
    # The default touched config splits off a lead share only for calls with at least
    # lead_min_ids ids (below it the plain path's fixed cost is lower); both copy the same pages.
    gen = torch.Generator().manual_seed(11)
    P, N, D = 256, 6, 64
    src = _pool(gen, N, P)
    shape = (N * P // D, model1_page_bytes(D))
    pages = [1, 4, 5]
    tok = _touched_problem(gen, N, P, pages)
    base = PageSplitSpec(P, D).default_config(touched=True)
    assert base.lead_split and base.lead_min_ids > tok.numel()
    for min_ids, lead in ((None, False), (tok.numel() + 1, False), (tok.numel(), True)):
        cfg = base if min_ids is None else dataclasses.replace(base, lead_min_ids=min_ids)
        paging.page_split(src, src_page_size=P, touched_indices=tok, out=torch.zeros(shape, dtype=torch.uint8),
                          config=cfg)  # the device state for this config
        state = paging._list_buffers[src.device, 0]
        state.lead_count.fill_(-5)  # only the lead path writes it
        out = torch.full(shape, SENTINEL, dtype=torch.uint8)
        _check_touched(src, paging.page_split(src, src_page_size=P, touched_indices=tok, out=out, config=cfg),
                       P, pages)
        assert (int(state.lead_count) != -5) == lead, (min_ids, int(state.lead_count))


def test_page_mark_and_compact_list_each_page_once():
    gen = torch.Generator().manual_seed(5)
    P, N = 256, 3000
    mod = sparsemla.gen.load_module(PageSplitSpec(P, 64))
    pages = [3, 17, 0, 2999, 22, 8, 1500, 1024, 1023]  # across compact blocks of 1024 marks
    tok = _touched_problem(gen, N, P, pages, per_page=300).reshape(-1)  # several blocks, many duplicates
    block = 256
    for dedup, copies, check, spacing in ((True, 1, False, 1), (False, 1, False, 1), (False, 4, False, 1),
                                          (False, 1, True, 1), (False, 4, True, 1), (False, 2, False, 32),
                                          (True, 1, False, 32)):  # every mark strategy marks the same pages
        marks = torch.zeros(copies, N, spacing, dtype=torch.int8)
        listed = torch.full((N,), -7, dtype=torch.int32)
        count = torch.full((1,), 12345, dtype=torch.int32)  # the mark kernel zeroes it
        mod.page_mark_kernel[(-(-tok.numel() // block),)](tok, tok.numel(), marks, N, count, BLOCK=block,
                                                          DEDUP=dedup, COPIES=copies, CHECK=check,
                                                          SPACING=spacing)
        assert int(count) == 0 and marks[:, :, 0].amax(0).nonzero().view(-1).tolist() == sorted(pages), dedup
        assert (marks[:, :, 1:] == 0).all()  # a mark is the first byte of its spacing
        if copies > 1:
            assert (marks.sum((1, 2)) > 0).sum() > 1  # the programs spread over the rows
        mod.page_compact_kernel[(-(-N // block),)](marks, N, listed, count, BLOCK=block, COPIES=copies,
                                                   SPACING=spacing, LEAD=False)
        assert int(count) == len(pages)
        assert sorted(listed[:len(pages)].tolist()) == sorted(pages)
        assert (listed[len(pages):] == -7).all()
        assert (marks == 0).all()


def test_page_split_persistent_buffer():
    gen = torch.Generator().manual_seed(21)
    P, N = 256, 4
    src = _pool(gen, N, P)
    first = sparsemla.page_split(src, src_page_size=P, buffer_tag="t-main",
                                 touched_indices=torch.tensor([0], dtype=torch.int32))
    # The call that allocates the buffer converts every page, touched or not.
    assert torch.equal(first, page_split_reference(src, src_page_size=P))
    old = first.clone()
    src2 = _pool(gen, N, P)
    again = sparsemla.page_split(src2, src_page_size=P, buffer_tag="t-main",
                                 touched_indices=torch.tensor([2 * P + 1, -1], dtype=torch.int32))
    assert again is first  # reused, not reallocated
    new = page_split_reference(src2, src_page_size=P)
    assert torch.equal(again[8:12], new[8:12])  # source page 2 -> destination pages 8..11
    assert torch.equal(again[:8], old[:8]) and torch.equal(again[12:], old[12:])
    other = sparsemla.page_split(src, src_page_size=P, buffer_tag="t-extra")
    assert other.data_ptr() != again.data_ptr()
    assert torch.equal(other, page_split_reference(src, src_page_size=P))


def test_cpu_fallback_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    gen = torch.Generator().manual_seed(3)
    req, table, local = _random_convert_problem(gen, 3, 40, 2, 4, 16)
    assert torch.equal(sparsemla.convert_indices(req, table, local, page_size=16),
                       _convert_loop(req, table, local, 16, 16, False))
    src = _pool(gen, 2, 128)
    assert torch.equal(sparsemla.page_split(src, src_page_size=128, out=torch.zeros(4, model1_page_bytes(64),
                                                                                     dtype=torch.uint8)),
                       page_split_reference(src, src_page_size=128))


def test_bad_inputs():
    i32 = torch.zeros(4, 8, dtype=torch.int32)
    req, table = torch.zeros(4, dtype=torch.int32), torch.zeros(2, 3, dtype=torch.int32)
    with pytest.raises(ValueError, match="local_indices: dtype torch.int64"):
        sparsemla.convert_indices(req, table, i32.long(), page_size=16)
    with pytest.raises(ValueError, match=r"req_id_per_token: shape \(3,\), expected \(4,\)"):
        sparsemla.convert_indices(req[:3], table, i32, page_size=16)
    with pytest.raises(ValueError, match="block_table: on meta"):
        sparsemla.convert_indices(req, table.to("meta"), i32, page_size=16)
    with pytest.raises(ValueError, match="page_size=0"):
        sparsemla.convert_indices(req, table, i32, page_size=0)
    with pytest.raises(ValueError, match="block_stride_rows=-4"):
        sparsemla.convert_indices(req, table, i32, page_size=16, block_stride_rows=-4)
    with pytest.raises(ValueError, match=r"indptr: shape \(4,\), expected \(5,\)"):
        sparsemla.pack_valid_prefix(i32, torch.zeros(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="out: dtype torch.int64"):
        sparsemla.pack_valid_prefix(i32, torch.zeros(5, dtype=torch.int32), out=torch.zeros(3, dtype=torch.int64))
    src = torch.zeros(2, model1_page_bytes(256), dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"src_pages: dtype torch.float16"):
        sparsemla.page_split(src.half(), src_page_size=256)
    with pytest.raises(ValueError, match=rf"src_pages: shape \(2, {model1_page_bytes(128)}\).*\[num_pages, "
                                         rf"{model1_page_bytes(256)}\] for src_page_size=256"):
        sparsemla.page_split(src[:, :model1_page_bytes(128)], src_page_size=256)
    with pytest.raises(ValueError, match="src_page_size=96: expected a multiple of dst_page_size=64"):
        sparsemla.page_split(src, src_page_size=96)
    with pytest.raises(ValueError, match=r"out: shape \(4, 37440\), expected contiguous \(8, 37440\)"):
        sparsemla.page_split(src, src_page_size=256, out=torch.zeros(4, 37440, dtype=torch.uint8))
    with pytest.raises(ValueError, match="touched_indices: dtype torch.float32"):
        sparsemla.page_split(src, src_page_size=256, touched_indices=torch.zeros(3))


def test_graph_only_paths_run_eagerly_once_per_config(monkeypatch):
    # The lead share and the TMA copy cost more host time than they save in an eager call: outside a
    # CUDA-graph capture they run only on the first call per (device, config), which builds their kernels.
    capturing = [False]
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])  # (CUDA calls, faked)
    built = set()
    cfg = PagingConfig(tma_stages=3)
    assert paging._captured_or_first(built, "cuda:0", cfg)
    assert not paging._captured_or_first(built, "cuda:0", cfg)
    assert paging._captured_or_first(built, "cuda:0", PagingConfig(tma_stages=4))
    assert paging._captured_or_first(built, "cuda:1", cfg)
    capturing[0] = True
    assert paging._captured_or_first(built, "cuda:0", cfg)  # inside a capture, always


def test_spec_validation():
    with pytest.raises(ValueError, match=r"ConvertIndicesSpec.page_size=0"):
        ConvertIndicesSpec(0, 2048)
    with pytest.raises(ValueError, match=r"PackValidPrefixSpec.arch='sm80'"):
        PackValidPrefixSpec(2048, "sm80")
    with pytest.raises(ValueError, match=r"PageSplitSpec.src_page_size=100: expected a multiple"):
        PageSplitSpec(100, 64)
    spec = PageSplitSpec(256, 64, "sm120")
    assert spec.key == "page_split-sm120-model1-p256-to64" and spec.module_name.isidentifier()
    with pytest.raises(ValueError, match=r"PagingConfig.block=100 for page_split-sm120"):
        PagingConfig(100, 4).check(spec)
    with pytest.raises(ValueError, match=r"PagingConfig.programs_per_sm=0 for page_split-sm120"):
        PagingConfig(512, 8, 0).check(spec)
    with pytest.raises(ValueError, match=r"PagingConfig.lead_split=3 for page_split-sm120.*power of two"):
        PagingConfig(lead_split=3).check(spec)
    with pytest.raises(ValueError, match=r"lead_split=8, mark_claim=False, mark_dedup=True\) for page_split-sm120"):
        PagingConfig(lead_split=8, mark_dedup=True).check(spec)
    with pytest.raises(ValueError, match=r"PagingConfig.lead_min_ids=-1 for page_split-sm120"):
        PagingConfig(lead_split=8, lead_min_ids=-1).check(spec)
    with pytest.raises(ValueError, match=r"PagingConfig.chunks=3 for page_split-sm120.*power of two in 1..16"):
        PagingConfig(chunks=3).check(spec)
    for stages in (1, 9, True):
        with pytest.raises(ValueError,
                           match=rf"PagingConfig.tma_stages={stages!r} for page_split-sm120.*0 or an int in 2..8"):
            PagingConfig(tma_stages=stages).check(spec)
    assert sparsemla.gen.load_module(spec).SPEC_KEY == spec.key


def test_tma_copy_geometry():
    # The pools as rows of 64 B: a 64-token destination page is 576 data rows (9 boxes of 64) and 8
    # scale rows, a 256-token source page 2340 rows with its scale rows from row 2304; sizes whose
    # scale rows are not a power-of-two box of 128 B or more (session 19: 8-token pages, a 64-byte box,
    # stopped the H200 with a misaligned address), or whose two stages do not fit, have no TMA copy.
    ctx = PageSplitTma(PageSplitSpec(256, 64)).template_context()
    assert {k: ctx[k] for k in ("part_rows", "box_rows", "boxes", "scale_rows", "src_page_rows", "dst_page_rows",
                                "src_scale_row", "stage_bytes")} == dict(
        part_rows=576, box_rows=64, boxes=9, scale_rows=8, src_page_rows=2340, dst_page_rows=585, src_scale_row=2304,
        stage_bytes=37376)
    ctx = PageSplitTma(PageSplitSpec(64, 16)).template_context()
    assert (ctx["box_rows"], ctx["boxes"], ctx["scale_rows"]) == (16, 9, 2)
    assert PageSplitTma(PageSplitSpec(256, 64)).key == "page_split-sm90-model1-p256-to64-tma"
    assert PageSplitTma.max_stages(PageSplitSpec(256, 64)) == 6
    assert PageSplitTma.max_stages(PageSplitSpec(256, 64, "sm120")) == 2
    for P, D, arch, why in ((240, 48, "sm90", "dst_page_size=48: expected 16 x a power of two"),
                            (256, 8, "sm90", "dst_page_size=8: expected 16 x a power of two"),
                            (512, 256, "sm90", "dst_page_size=256: two stages of 149504 B exceed sm90.s"),
                            (256, 128, "sm120", "dst_page_size=128: two stages of 74752 B exceed sm120.s")):
        with pytest.raises(ValueError, match=f"no TMA copy for page_split-{arch}-model1-p{P}-to{D}: {why}"):
            PageSplitTma(PageSplitSpec(P, D, arch))
    # The default on sm90 copies by TMA (measured there); elsewhere the list copy (not measured)
    assert PageSplitSpec(256, 64).default_config(touched=True).tma_stages == 3
    assert PageSplitSpec(256, 64, "sm120").default_config(touched=True).tma_stages == 0
    assert PageSplitSpec(256, 16).default_config(touched=True).tma_stages == 3
    assert PageSplitSpec(240, 48).default_config(touched=True).tma_stages == 0


_COMPILE_SCRIPT = """
import json
from sparsemla.gen.paging import ConvertIndicesSpec, PackValidPrefixSpec, PageSplitSpec, PageSplitTma, compile_paging
from sparsemla.gen.spec import ARCHS
res = {}
for spec in (ConvertIndicesSpec(64, 2048), PackValidPrefixSpec(2048), PageSplitSpec(256, 64), PageSplitSpec(512, 64)):
    for arch in ("sm90", "sm120", "sm121"):
        shared = compile_paging(spec, arch)
        res[spec.key + "@" + arch] = max(shared.values()) <= ARCHS[arch].smem_bytes
# the TMA copy (the default's on sm90; with a config on the others, its stages cut to what fits)
tma = PageSplitSpec(256, 64).default_config(touched=True)
assert tma.tma_stages
for spec in (PageSplitSpec(256, 64), PageSplitSpec(64, 16), PageSplitSpec(512, 128)):
    for arch in ("sm90", "sm120", "sm121"):
        if PageSplitTma.problem(PageSplitSpec(spec.src_page_size, spec.dst_page_size, arch)) is None:
            shared = {k: v for k, v in compile_paging(spec, arch, tma).items() if k.startswith("page_split_tma")}
            assert len(shared) == 1, shared
            res[spec.key + "@" + arch + " tma"] = max(shared.values()) <= ARCHS[arch].smem_bytes
# where the page sizes do not fit the arch, the runtime runs the list copy: nothing to compile, no error
assert not any(k.startswith("page_split_tma") for k in compile_paging(PageSplitSpec(512, 128), "sm120", tma))
print(json.dumps(res))
"""


def test_templates_compile_for_gpu_targets(tmp_path):
    # A separate process without the interpreter: in a process that imported triton.language under
    # TRITON_INTERPRET=1, the reduction helpers (tl.sum, tl.cumsum) are interpreter functions and
    # cannot be compiled.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    fits = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(fits) == 12 + 7 and all(fits.values()), fits  # (512->128 has no TMA copy on sm120/121)


def test_a_bad_config_is_reported_on_every_call():
    # Configs are checked once per (spec, config) and cached; a bad one raises each time, and
    # something that is not a PagingConfig is named as such.
    gen = torch.Generator().manual_seed(3)
    req, table, local = torch.zeros(2, dtype=torch.int32), torch.zeros(1, 4, dtype=torch.int32), \
        torch.randint(-1, 64, (2, 8), generator=gen, dtype=torch.int32)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"PagingConfig.block=100 for convert_indices"):
            paging.convert_indices(req, table, local, page_size=16, config=PagingConfig(100, 4))
    with pytest.raises(TypeError, match=r"config: expected a PagingConfig or None, got dict"):
        paging.convert_indices(req, table, local, page_size=16, config={"block": 64})
    want = paging.convert_indices_reference(req, table, local, page_size=16)
    for _ in range(2):  # the cached default, twice
        assert torch.equal(paging.convert_indices(req, table, local, page_size=16), want)
