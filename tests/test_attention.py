"""The generated Triton kernels (in Triton's interpreter) against an independent fp64 reference,
with FlashMLA's traps: NaN in every unreferenced slot, -1 indices, topk_length, all-invalid rows,
non-contiguous inputs, sinks, an extra cache, and split-K."""
import math

import pytest
import torch

import sparsemla
from sparsemla.gen.spec import Config, KernelSpec

from helpers import (FORMAT_CASES, make_cache, pack_parts_bf16, poison_unreferenced, random_indices, reference64,
                     rel_err, two_caches)

TOL = {torch.float16: (3e-3, 2e-3), torch.float32: (2e-5, 2e-5)}  # (rel L2 of out, abs of lse)


def _widen(cache, extra):
    """The same cache as a strided view whose rows are ``extra`` elements wider."""
    wide = torch.zeros(*cache.shape[:-1], cache.shape[-1] + extra, dtype=cache.dtype)
    wide[..., : cache.shape[-1]] = cache
    return wide[..., : cache.shape[-1]]


def _check(out, lse, ref_out, ref_lse, dtype, empty_rows=()):
    rtol, ltol = TOL[dtype]
    assert torch.isfinite(out).all(), f"NaN/inf leaked into rows {[t for t in range(out.shape[0]) if not torch.isfinite(out[t]).all()]}"
    assert rel_err(out, ref_out) < rtol
    fin = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), fin)
    assert (lse[~fin] == math.inf).all()
    if fin.any():
        assert (lse[fin].double() - ref_lse[fin]).abs().max().item() < ltol * max(1.0, ref_lse[fin].abs().max().item())
    for t in empty_rows:
        assert (out[t] == 0).all() and (lse[t] == math.inf).all()


@pytest.mark.parametrize("case", list(FORMAT_CASES))
@pytest.mark.parametrize("dtype,splits,prefetch,exchange,l2", [(torch.float16, 1, False, False, 2),
                                                                (torch.float32, 3, False, True, 0),
                                                                (torch.float16, 2, True, True, 1)])
def test_formats_against_reference(case, dtype, splits, prefetch, exchange, l2):
    kv_format, d_qk, page_size = FORMAT_CASES[case]
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, topk, slots = 4, 16, 48, 256
    cache, kw, deq = make_cache(kv_format, d_qk, slots, page_size, dtype, gen)
    idx = random_indices(T, topk, slots, gen)
    idx[2] = -1  # a row with nothing valid
    topk_length = torch.tensor([topk, 17, topk, 0], dtype=torch.int32)
    cache = poison_unreferenced(cache, kv_format, page_size or 1,
                                torch.cat([idx[t, : int(topk_length[t])] for t in range(T)]))
    q_big = torch.randn(H, T, d_qk + 8, generator=gen).to(dtype)
    q = q_big[..., :d_qk].transpose(0, 1)  # non-contiguous in every dim but the last
    if kv_format in ("auto", "fp8_e4m3"):
        cache = _widen(cache, 32)  # row stride > d_qk
    scale = d_qk ** -0.5
    out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=scale, kv_format=kv_format, topk_length=topk_length,
                                    return_lse=True, backend="triton",
                                    config=Config(16, 16, splits, 4, 1, index_prefetch=prefetch,
                                                  p_exchange=exchange, l2_prefetch=l2), **kw)
    ref_out, ref_lse = reference64(q, deq, idx, scale, 512, topk_length=topk_length)
    assert out.dtype == dtype and out.shape == (T, H, 512)
    _check(out, lse, ref_out, ref_lse, dtype, empty_rows=(2, 3))
    # The PyTorch backend reads the same poisoned cache.
    t_out, t_lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=scale, kv_format=kv_format,
                                        topk_length=topk_length, return_lse=True, backend="torch", **kw)
    _check(t_out, t_lse, ref_out, ref_lse, dtype, empty_rows=(2, 3))


# (8 splits of a top-k of 40 in 16-key tiles: splits 3-7 start past the list and merge as empty partials;
# parts_first: the combine kernel's PARTS_FIRST, forced here: runtime/triton_backend._parts_first takes it on a GPU)
@pytest.mark.parametrize("splits,parts_first", [(1, False), (2, False), (8, False), (2, True), (8, True)])
def test_sinks_including_infinite(splits, parts_first, monkeypatch):
    from sparsemla.runtime import api, triton_backend
    monkeypatch.setattr(triton_backend, "_parts_first", lambda combine_grid, device: parts_first)
    api.clear_call_cache()  # (a prepared launch keeps the combine it was made with)
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, topk, slots, d_qk = 3, 20, 40, 128, 576  # H not a multiple of the head block
    cache, kw, deq = make_cache("auto", d_qk, slots, None, torch.float32, gen)
    idx = random_indices(T, topk, slots, gen)
    idx[1] = -1
    sink = torch.randn(H, generator=gen)
    sink[0], sink[1] = math.inf, -math.inf
    q = torch.randn(T, H, d_qk, generator=gen)
    out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, attn_sink=sink, return_lse=True,
                                    backend="triton", config=Config(16, 16, splits, 4, 1))
    ref_out, ref_lse = reference64(q, deq, idx, 0.05, 512, sink=sink)
    _check(out, lse, ref_out, ref_lse, torch.float32, empty_rows=(1,))
    assert (out[:, 0] == 0).all()  # a +inf sink takes all the weight


@pytest.mark.parametrize("parts_first", [False, True])
def test_the_combine_merges_bfloat16_partials(parts_first):
    # The combine kernel's PARTS_BF16 (the Gluon kernels' bfloat16 partials, which only a GPU writes: there
    # gpu_correctness.py checks them end to end) on partials written in that format here (helpers.pack_parts_bf16),
    # against a float64 merge of the same rounded partials: rows from 1e-30 to 1e30 in magnitude, an empty split, a
    # sink of +inf and one of -inf, the LSE; then against the unrounded partials, within bfloat16's rounding.
    from sparsemla.gen.render import load_module
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, S = 2, 5, 5
    spec = KernelSpec(num_heads=H, has_sink=True, return_lse=True)
    rows = T * H * S
    parts = torch.randn(rows, 512, generator=gen) * torch.tensor([1e-30, 1.0, 1e30])[torch.arange(rows) % 3, None]
    lse2 = torch.randn(rows, generator=gen) * 4
    lse2[3], parts[3] = -math.inf, 0.0  # an empty split (the kernel writes zeros)
    sink = torch.randn(H, generator=gen)
    sink[1], sink[2] = math.inf, -math.inf
    out, lse = torch.full((T, H, 512), math.nan), torch.full((T, H), math.nan)
    load_module(spec).sparse_mla_combine[(T * H, 4)](
        pack_parts_bf16(parts), lse2, sink, out, *out.stride(), lse, *lse.stride(), H, NUM_SPLITS=S, SPLITS_P2=8,
        BLOCK_DV=128, PDL=False, PARTS_FIRST=parts_first, TRIGGER=False, PARTS_BF16=True)
    logits = torch.cat([lse2.double().view(T, H, S) * math.log(2), sink.double()[None, :, None].expand(T, H, 1)], -1)
    w = torch.softmax(logits, dim=-1)[..., :S]
    finite = [0, 2, 3, 4]  # (head 1's +inf sink takes all the weight: its output is 0)
    for rounded, tol in ((parts.bfloat16(), 1e-5), (parts, 2 ** -8)):
        ref = (w[..., None] * rounded.double().view(T, H, S, 512)).sum(2)
        for t in range(T):
            for h in finite:
                assert rel_err(out[t, h], ref[t, h]) < tol, (t, h)
    assert (out[:, 1] == 0).all()
    ref_lse = torch.logsumexp(lse2.double().view(T, H, S) * math.log(2), dim=-1)  # (the LSE leaves the sink out)
    assert (lse.double() - ref_lse).abs().max().item() < 1e-5 * max(1.0, ref_lse.abs().max().item())


@pytest.mark.parametrize("kv_format,d_qk,page,x_page", [("model1", 512, 64, 256), ("auto", 576, None, None),
                                                        ("fp8_e4m3", 576, None, None)])
def test_extra_cache(kv_format, d_qk, page, x_page):
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, topk, xtopk = 3, 16, 32, 24
    xlen = torch.tensor([xtopk, 5, 0], dtype=torch.int32)
    cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(  # only the extra cache is valid for token 0
        kv_format, d_qk, page, x_page, torch.float16, gen, topk=topk, xtopk=xtopk, slots=192, x_slots=512,
        xlen=xlen, invalid_rows=(0,))
    q = torch.randn(T, H, d_qk, generator=gen).half()
    for splits, prefetch, exchange, l2 in ((1, False, False, 2), (2, False, True, 0), (2, True, False, 1)):
        out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, kv_format=kv_format, extra_kv_cache=xcache,
                                        extra_indices=xidx, extra_topk_length=xlen, return_lse=True,
                                        backend="triton", config=Config(16, 16, splits, 4, 1, prefetch, exchange, l2),
                                        **kw)
        ref_out, ref_lse = reference64(q, deq, idx, 0.04, 512, x_deq=xdeq, x_indices=xidx, x_topk_length=xlen)
        _check(out, lse, ref_out, ref_lse, torch.float16)


@pytest.mark.parametrize("splits", [1, 3])
def test_lengths_outside_the_list_count_as_its_ends(splits):
    # A topk_length below 0 counts as 0 and one past the list as the whole list (SGLang's mask, pos < length), for
    # either cache, in the Triton kernel and the PyTorch backend alike.
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, topk, xtopk = 3, 16, 32, 24
    tlen_given = torch.tensor([-5, topk + 9, 7], dtype=torch.int32)
    xlen_given = torch.tensor([xtopk + 1, -1, 2 ** 31 - 1], dtype=torch.int32)
    tlen, xlen = tlen_given.clamp(0, topk), xlen_given.clamp(0, xtopk)
    cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(
        "auto", 576, None, None, torch.float16, gen, topk=topk, xtopk=xtopk, slots=192, x_slots=256, tlen=tlen,
        xlen=xlen)
    q = torch.randn(T, H, 576, generator=gen).half()
    ref_out, ref_lse = reference64(q, deq, idx, 0.04, 512, topk_length=tlen, x_deq=xdeq, x_indices=xidx,
                                   x_topk_length=xlen)
    for backend, how in (("triton", dict(config=Config(16, 16, splits, 4, 1))), ("torch", {})):
        out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, topk_length=tlen_given, extra_kv_cache=xcache,
                                        extra_indices=xidx, extra_topk_length=xlen_given, return_lse=True,
                                        backend=backend, **how, **kw)
        _check(out, lse, ref_out, ref_lse, torch.float16)


@pytest.mark.parametrize("kv_format,d_qk,page,x_page", [("model1", 512, 64, 256), ("fp8_e4m3", 576, None, None)])
def test_extra_cache_as_two_launches(kv_format, d_qk, page, x_page, monkeypatch):
    # triton_backend.PartsLaunch: one launch per cache writing split-K partials, then one merge (with the sink
    # and the LSE); each part runs the config chosen for a call of its cache alone (here forced, with splits).
    from sparsemla.runtime import api, dispatch, triton_backend
    monkeypatch.setattr(triton_backend, "_EXTRA_PARTS", True)
    api.clear_call_cache()
    chosen = []

    def select(spec, T, dev):  # the main list in 3 splits, the extra one in 1 or 2
        cfg = Config(16, 16, 3 if spec.topk == 40 else 1 + len(chosen) % 2, 4, 1, l2_prefetch=2 * (spec.topk == 40))
        chosen.append((spec, cfg))
        return cfg

    monkeypatch.setattr(dispatch, "select_config", select)
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, topk, xtopk = 4, 16, 40, 24
    tlen = torch.tensor([topk, topk, 7, topk], dtype=torch.int32)
    xlen = torch.tensor([xtopk, 0, 5, 0], dtype=torch.int32)
    cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(  # token 0: only the extra cache is valid, 3: nothing
        kv_format, d_qk, page, x_page, torch.float16, gen, topk=topk, xtopk=xtopk, slots=192, x_slots=512,
        tlen=tlen, xlen=xlen, invalid_rows=(0, 3))
    q = torch.randn(T, H, d_qk, generator=gen).half()
    sink = torch.randn(H, generator=gen)
    sink[0], sink[1] = math.inf, -math.inf
    ref_out, ref_lse = reference64(q, deq, idx, 0.04, 512, topk_length=tlen, sink=sink, x_deq=xdeq, x_indices=xidx,
                                   x_topk_length=xlen)
    for _ in range(2):  # the second call: the prepared launch
        out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, kv_format=kv_format, topk_length=tlen,
                                        attn_sink=sink, extra_kv_cache=xcache, extra_indices=xidx,
                                        extra_topk_length=xlen, return_lse=True, backend="triton", **kw)
        _check(out, lse, ref_out, ref_lse, torch.float16, empty_rows=(3,))
    (main, _), (extra, _) = chosen[:2]
    assert len(chosen) == 2 and [type(p.launch) for p in api._calls.values()] == [triton_backend.PartsLaunch]
    assert (main.topk, main.extra_topk, main.has_sink, extra.topk, extra.page_size) == \
        (topk, 0, False, xtopk, x_page or 1)
    assert (out[:, 0] == 0).all()  # a +inf sink takes all the weight
    # Captured on a stream without a workspace (as torch.compile's CUDA-graph trees do): each part writes into a
    # buffer of its own, and none is kept past the call (the trees refuse a tensor in their pool that outlives it).
    import gc
    import weakref
    (prepared,) = api._calls.values()
    monkeypatch.setattr(triton_backend, "capturing", lambda device: True)
    held = []
    for part in (prepared.launch.main, prepared.launch.extra):
        part.stream_fn = lambda index: 7  # a stream no call ran on
        run = part._launch

        def launching(*args, part=part, run=run):
            held.append(weakref.ref(part.ws_buf))
            run(*args)

        monkeypatch.setattr(part, "_launch", launching)
    out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, kv_format=kv_format, topk_length=tlen,
                                    attn_sink=sink, extra_kv_cache=xcache, extra_indices=xidx,
                                    extra_topk_length=xlen, return_lse=True, backend="triton", **kw)
    _check(out, lse, ref_out, ref_lse, torch.float16, empty_rows=(3,))
    gc.collect()
    assert len(held) == 2 and all(ref() is None for ref in held)
    assert (torch.device("cpu"), 7) not in triton_backend._workspaces


def test_paged_auto_cache_with_permuted_pages_and_small_dims():
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H, topk, page, pages, d_qk, d_v = 5, 4, 37, 16, 12, 80, 64  # rope 16, odd topk, H < 16
    kv = torch.randn(pages * page, d_qk, generator=gen)
    cache = kv.reshape(pages, page, d_qk)
    # A permuted block table: request-local positions map to shuffled physical pages.
    perm = torch.randperm(pages, generator=gen)
    local = torch.randint(0, pages * page, (T, topk), generator=gen)
    idx = (perm[local // page] * page + local % page).to(torch.int32)
    q = torch.randn(T, H, d_qk, generator=gen)
    out = torch.full((T, H, d_v), float("nan"))
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.1, d_v=d_v, out=out, backend="triton",
                         config=Config(16, 16, 2, 4, 1))
    ref_out, _ = reference64(q, kv.double(), idx, 0.1, d_v)
    assert rel_err(out, ref_out) < TOL[torch.float32][0]


def test_auto_backend_on_cpu_is_the_reference():
    gen = torch.Generator().manual_seed(1)
    cache, kw, deq = make_cache("auto", 576, 64, None, torch.bfloat16, gen)
    q = torch.randn(2, 8, 576, generator=gen).bfloat16()
    idx = random_indices(2, 16, 64, gen)
    out = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04)
    ref, _ = reference64(q, deq, idx, 0.04, 512)
    assert out.dtype == torch.bfloat16 and rel_err(out, ref) < 1e-2


def test_bf16_q_on_the_interpreter_computes_in_fp32():
    # bf16 tl.dot is broken in the interpreter (triton#11584); the API picks fp32 compute there.
    gen = torch.Generator().manual_seed(2)
    cache, kw, deq = make_cache("auto", 576, 64, None, torch.bfloat16, gen)
    q = torch.randn(2, 16, 576, generator=gen).bfloat16()
    idx = random_indices(2, 32, 64, gen)
    out = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, backend="triton", config=Config(16, 16, 1, 4, 1))
    ref, _ = reference64(q, deq, idx, 0.04, 512)
    assert rel_err(out, ref) < 1e-2


@pytest.mark.parametrize("backend", ["torch", "triton"])
@pytest.mark.parametrize("T,H", [(0, 16), (3, 0)])
def test_no_tokens_or_no_heads_give_empty_results(backend, T, H):
    # (an engine's step with no decode tokens; a rank with no heads): empty outputs of the right shapes
    cache = torch.randn(64, 576).half()
    idx = torch.randint(0, 64, (T, 8), dtype=torch.int32)
    out, lse = sparsemla.sparse_mla(torch.randn(T, H, 576).half(), cache, idx, sm_scale=0.04, return_lse=True,
                                    backend=backend)
    assert out.shape == (T, H, 512) and lse.shape == (T, H)


@pytest.mark.parametrize("empty", ["extra", "main", "both", "main_alone"])
def test_a_zero_width_list(empty):
    # An empty list (an engine's compressed list before the first block is full, say) is a list with no slot:
    # an empty extra list leaves the main cache alone, an empty main list leaves the extra cache (each with its
    # own page size and scale), and with no slot at all every row is output 0, LSE +inf. Twice: the second call
    # takes the prepared launch.
    from sparsemla.runtime import api
    api.clear_call_cache()
    gen = torch.Generator().manual_seed(torch.seed() % (1 << 31))
    T, H = 3, 16
    xlen = torch.tensor([20, 5, 0], dtype=torch.int32)
    cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(
        "model1", 512, 64, 256, torch.float16, gen, topk=24, xtopk=20, slots=192, x_slots=512, xlen=xlen)
    if empty in ("main", "both", "main_alone"):
        idx = idx[:, :0]
    if empty in ("extra", "both"):
        xidx, xlen = xidx[:, :0], None
    q = torch.randn(T, H, 512, generator=gen).half()
    extra = {} if empty == "main_alone" else dict(extra_kv_cache=xcache, extra_indices=xidx, extra_topk_length=xlen)
    if empty == "main_alone":
        kw.pop("extra_page_size")
    ref_out, ref_lse = reference64(q, deq, idx, 0.04, 512, x_deq=xdeq if extra else None,
                                   x_indices=xidx if extra else None, x_topk_length=xlen)
    for _ in range(2):
        out = torch.full((T, H, 512), float("nan"), dtype=torch.float16)
        got, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, kv_format="model1", out=out, return_lse=True,
                                        backend="triton", **extra, **kw)
        assert got is out
        empty_rows = tuple(range(T)) if empty in ("both", "main_alone") else (2,) if empty == "main" else ()
        _check(out, lse, ref_out, ref_lse, torch.float16, empty_rows=empty_rows)
