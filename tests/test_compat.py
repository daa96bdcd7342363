"""FlashMLA-compatible entry points against sparse_mla(backend="torch") and an independent fp64 loop."""
import os

os.environ["TRITON_INTERPRET"] = "1"

import math  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.compat import (MLASchedMeta, flash_mla_sparse_fwd, flash_mla_with_kvcache,  # noqa: E402
                              get_mla_metadata)
from sparsemla.gen.layout import model1_page_bytes  # noqa: E402

from helpers import reference64, rel_err  # noqa: E402


def model1_4d(pages, page_size=64):
    """FlashMLA's strided 4-D view of model1 pages [n, page_bytes]."""
    pb = model1_page_bytes(page_size)
    return pages.as_strided((pages.shape[0], page_size, 1, 584), (pb, 584, 584, 1))


def make_k_cache(kv_format, slots, gen):
    """(k_cache as FlashMLA takes it, fp64 dequantized rows, d_qk, q dtype)."""
    if kv_format == "auto":
        kv = torch.randn(slots, 576, generator=gen)
        return kv.view(-1, 16, 1, 576), kv.double(), 576, torch.float32
    if kv_format == "fp8_ds_mla":
        cache = sparsemla.quantize_kv(torch.randn(slots, 576, generator=gen), "fp8_ds_mla", page_size=16)
        return cache.unsqueeze(2), sparsemla.dequantize_kv(cache, "fp8_ds_mla").double(), 576, torch.bfloat16
    pages = sparsemla.quantize_kv(torch.randn(slots, 512, generator=gen), "model1", page_size=64)
    deq = sparsemla.dequantize_kv(pages, "model1", page_size=64).double()
    return model1_4d(pages), deq, 512, torch.bfloat16


def _check(out, lse, ref_out, ref_lse, tol):
    assert rel_err(out, ref_out) < tol
    fin = torch.isfinite(ref_lse)
    assert torch.equal(fin, torch.isfinite(lse)) and (lse[~fin] == math.inf).all()
    assert (lse[fin].double() - ref_lse[fin]).abs().max() < 1e-4


@pytest.mark.parametrize("kv_format", ["auto", "fp8_ds_mla", "model1"])
def test_decode_against_references(kv_format):
    gen = torch.Generator().manual_seed(3)
    b, s_q, h, topk, slots = 2, 3, 5, 24, 128
    k_cache, deq, d_qk, dtype = make_k_cache(kv_format, slots, gen)
    q = torch.randn(b, s_q, h, d_qk, generator=gen).to(dtype)
    idx = torch.randint(0, slots, (b, s_q, topk), generator=gen, dtype=torch.int32)
    idx[torch.rand(b, s_q, topk, generator=gen) < 0.25] = -1
    idx[1, 2] = -1  # a query with nothing valid
    topk_length = torch.tensor([topk, 11], dtype=torch.int32)  # per batch, as FlashMLA
    sched, _ = get_mla_metadata()
    out, lse = flash_mla_with_kvcache(q, k_cache, None, None, 512, sched, None, is_fp8_kvcache=kv_format != "auto",
                                      indices=idx, topk_length=topk_length)
    assert out.shape == (b, s_q, h, 512) and out.dtype == dtype
    assert lse.shape == (b, h, s_q) and lse.dtype == torch.float32 and lse.is_contiguous()
    assert (out[1, 2] == 0).all() and (lse[1, :, 2] == math.inf).all()

    scale = d_qk ** -0.5  # FlashMLA's default softmax_scale
    T = b * s_q
    tl_tok = topk_length.repeat_interleave(s_q)
    ref_out, ref_lse = reference64(q.reshape(T, h, d_qk), deq, idx.reshape(T, topk), scale, 512, topk_length=tl_tok)
    _check(out.reshape(T, h, 512), lse.transpose(1, 2).reshape(T, h), ref_out, ref_lse,
           2e-5 if dtype == torch.float32 else 1e-2)
    kw = {"page_size": 64} if kv_format == "model1" else {}
    t_out, t_lse = sparsemla.sparse_mla(q.reshape(T, h, d_qk), k_cache, idx.reshape(T, topk), sm_scale=scale,
                                        kv_format=kv_format, topk_length=tl_tok, return_lse=True, backend="torch", **kw)
    assert torch.equal(out.reshape(T, h, 512), t_out) and torch.equal(lse.transpose(1, 2).reshape(T, h), t_lse)


def _model1_decode_problem(h, seed=5):
    gen = torch.Generator().manual_seed(seed)
    b, topk, xtopk = 3, 20, 12
    pages = sparsemla.quantize_kv(torch.randn(128, 512, generator=gen), "model1", page_size=64)
    xpages = sparsemla.quantize_kv(torch.randn(64, 512, generator=gen), "model1", page_size=64)
    q = torch.randn(b, 1, h, 512, generator=gen).to(torch.bfloat16)
    idx = torch.randint(0, 128, (b, 1, topk), generator=gen, dtype=torch.int32)
    xidx = torch.randint(0, 64, (b, 1, xtopk), generator=gen, dtype=torch.int32)
    idx[2], xidx[2] = -1, -1  # nothing valid in either cache
    sink = torch.linspace(-1.0, 2.0, h)
    sink[0] = float("-inf")  # no effect
    args = dict(indices=idx, attn_sink=sink, extra_k_cache=model1_4d(xpages), extra_indices_in_kvcache=xidx,
                topk_length=torch.tensor([topk, 7, topk], dtype=torch.int32),
                extra_topk_length=torch.tensor([5, xtopk, xtopk], dtype=torch.int32), softmax_scale=0.06)
    return q, pages, xpages, args


def test_decode_model1_extra_cache_and_sink():
    q, pages, xpages, args = _model1_decode_problem(h=4)
    out, lse = flash_mla_with_kvcache(q, model1_4d(pages), None, None, 512, is_fp8_kvcache=True, **args)
    deq = sparsemla.dequantize_kv(pages, "model1", page_size=64).double()
    xdeq = sparsemla.dequantize_kv(xpages, "model1", page_size=64).double()
    ref_out, ref_lse = reference64(q[:, 0], deq, args["indices"][:, 0], 0.06, 512, topk_length=args["topk_length"],
                                   sink=args["attn_sink"], x_deq=xdeq, x_indices=args["extra_indices_in_kvcache"][:, 0],
                                   x_topk_length=args["extra_topk_length"])
    _check(out[:, 0], lse[:, :, 0], ref_out, ref_lse, 1e-2)
    assert (out[2] == 0).all()


def test_decode_through_triton_any_head_count(monkeypatch):
    monkeypatch.setenv("SPARSEMLA_BACKEND", "triton")  # auto on the CPU would be the reference
    q, pages, xpages, args = _model1_decode_problem(h=3)
    out, lse = flash_mla_with_kvcache(q, model1_4d(pages), None, None, 512, is_fp8_kvcache=True, **args)
    monkeypatch.setenv("SPARSEMLA_BACKEND", "torch")
    ref_out, ref_lse = flash_mla_with_kvcache(q, model1_4d(pages), None, None, 512, is_fp8_kvcache=True, **args)
    assert out.shape == (3, 1, 3, 512)
    _check(out, lse, ref_out, ref_lse, 1e-2)


def test_sparse_fwd():
    gen = torch.Generator().manual_seed(7)
    s_q, h, s_kv, topk = 5, 6, 40, 16
    q = torch.randn(s_q, h, 576, generator=gen).to(torch.bfloat16)
    kv = torch.randn(s_kv, 1, 576, generator=gen).to(torch.bfloat16)
    idx = torch.randint(0, s_kv, (s_q, 1, topk), generator=gen, dtype=torch.int32)
    idx[0, 0, :4] = torch.tensor([-1, s_kv, s_kv + 7, -1])  # FlashMLA: -1 or >= s_kv is invalid
    idx[3] = -1
    topk_length = torch.tensor([topk, 9, topk, topk, 1], dtype=torch.int32)
    sink = torch.randn(h, generator=gen)
    out, max_logits, lse = flash_mla_sparse_fwd(q, kv, idx, 0.05, attn_sink=sink, topk_length=topk_length)
    assert out.shape == (s_q, h, 512) and max_logits.shape == lse.shape == (s_q, h)
    ref_out, ref_lse = reference64(q, kv[:, 0].double(), idx[:, 0], 0.05, 512, topk_length=topk_length, sink=sink)
    _check(out, lse, ref_out, ref_lse, 1e-2)
    for t in range(s_q):  # max_logits: an independent loop
        sel = [int(s) for s in idx[t, 0, :int(topk_length[t])] if 0 <= int(s) < s_kv]
        if not sel:
            assert (max_logits[t] == -math.inf).all() and (out[t] == 0).all()
            continue
        expect = (q[t].double() @ kv[sel, 0].double().T * 0.05).amax(1)
        assert (max_logits[t].double() - expect).abs().max() < 1e-4
    _, none, _ = flash_mla_sparse_fwd(q, kv[:, 0], idx[:, 0], 0.05, return_max_logits=False)
    assert none is None


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_out_argument(monkeypatch, backend):
    """out= (vLLM's DeepSeek-V4 calls pass it): written in place and returned, also where its strides allow no
    [b * s_q, h, d_v] view (then the result is copied in); the same values as a call without it."""
    monkeypatch.setenv("SPARSEMLA_BACKEND", backend)
    gen = torch.Generator().manual_seed(torch.seed())
    b, s_q, h, topk, slots = 2, 3, 4, 16, 64
    k_cache, _, d_qk, dtype = make_k_cache("fp8_ds_mla", slots, gen)
    q = torch.randn(b, s_q, h, d_qk, generator=gen).to(dtype)
    idx = torch.randint(0, slots, (b, s_q, topk), generator=gen, dtype=torch.int32)
    ref_out, ref_lse = flash_mla_with_kvcache(q, k_cache, None, None, 512, is_fp8_kvcache=True, indices=idx)
    viewable = torch.full((b * s_q + 2, h, 512), float("nan"), dtype=dtype)[1:-1].view(b, s_q, h, 512)
    strided = torch.full((s_q, b, h, 512), float("nan"), dtype=dtype).transpose(0, 1)  # no flat view
    for out in (viewable, strided):
        res, lse = flash_mla_with_kvcache(q, k_cache, None, None, 512, is_fp8_kvcache=True, indices=idx, out=out)
        assert res is out and torch.equal(out, ref_out) and torch.equal(lse, ref_lse)
    with pytest.raises(TypeError, match=r"^out: dtype torch.float32, expected torch.bfloat16"):
        flash_mla_with_kvcache(q, k_cache, None, None, 512, is_fp8_kvcache=True, indices=idx,
                               out=torch.empty(b, s_q, h, 512))
    with pytest.raises(ValueError, match=r"^out: shape \(2, 3, 4, 256\), expected \[b, s_q, h, head_dim_v\]"):
        flash_mla_with_kvcache(q, k_cache, None, None, 512, is_fp8_kvcache=True, indices=idx,
                               out=torch.empty(b, s_q, h, 256, dtype=dtype))

    qp = torch.randn(5, h, 576, generator=gen).to(dtype)
    kv = torch.randn(slots, 1, 576, generator=gen).to(dtype)
    pidx = torch.randint(0, slots, (5, 1, topk), generator=gen, dtype=torch.int32)
    ref, _, ref_lse = flash_mla_sparse_fwd(qp, kv, pidx, 0.05, return_max_logits=False)
    buf = torch.full((9, h, 512), float("nan"), dtype=dtype)  # out: a slice of an engine's output buffer
    res, _, lse = flash_mla_sparse_fwd(qp, kv, pidx, 0.05, out=buf[2:7], return_max_logits=False)
    assert res.data_ptr() == buf[2].data_ptr() and torch.equal(buf[2:7], ref) and torch.equal(lse, ref_lse)
    assert buf[:2].isnan().all() and buf[7:].isnan().all()
    with pytest.raises(ValueError, match=r"^out: shape \(4, 4, 512\), expected \(5, 4, 512\)"):
        flash_mla_sparse_fwd(qp, kv, pidx, 0.05, out=buf[:4])


def test_sparse_fwd_indexer_lse():
    """indexer_topk (upstream FlashMLA's current signature): a fourth result, the LSE over each list's first
    indexer_topk entries within its topk_length, against the fp64 reference over those entries."""
    gen = torch.Generator().manual_seed(torch.seed())
    s_q, h, s_kv, topk, first = 4, 3, 50, 24, 10
    q = torch.randn(s_q, h, 512, generator=gen)
    kv = torch.randn(s_kv, 1, 512, generator=gen)
    idx = torch.randint(0, s_kv, (s_q, 1, topk), generator=gen, dtype=torch.int32)
    idx[1, 0, :first] = -1  # nothing valid in its indexer part
    topk_length = torch.tensor([topk, topk, 6, 0], dtype=torch.int32)
    sink = torch.randn(h, generator=gen)  # no effect on either LSE
    out, max_logits, lse, lse_indexer = flash_mla_sparse_fwd(q, kv, idx, 0.07, 512, sink, topk_length, first)
    ref_out, ref_lse = reference64(q, kv[:, 0].double(), idx[:, 0], 0.07, 512, topk_length=topk_length, sink=sink)
    _check(out, lse, ref_out, ref_lse, 2e-5)
    _, ref_first = reference64(q, kv[:, 0].double(), idx[:, 0, :first], 0.07, 512,
                               topk_length=topk_length.clamp(max=first))
    _check(out, lse_indexer, ref_out, ref_first, 2e-5)
    assert (lse_indexer[1] == math.inf).all() and (lse_indexer[3] == math.inf).all()
    assert torch.isfinite(lse[1]).all()
    assert len(flash_mla_sparse_fwd(q, kv, idx, 0.07, indexer_topk=0)) == 3
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match=f"^indexer_topk={bad!r}: expected an int >= 0"):
            flash_mla_sparse_fwd(q, kv, idx, 0.07, indexer_topk=bad)


def test_get_mla_metadata():
    meta, splits = get_mla_metadata(torch.zeros(2, dtype=torch.int32), 128, 1, num_heads_q=128, topk=2048)
    assert isinstance(meta, MLASchedMeta) and splits is None


def test_errors():
    gen = torch.Generator().manual_seed(0)
    k_cache, _, _, _ = make_k_cache("model1", 128, gen)
    q = torch.randn(2, 1, 4, 512).to(torch.bfloat16)
    idx = torch.zeros(2, 1, 8, dtype=torch.int32)

    def call(**kw):
        args = dict(q=q, k_cache=k_cache, block_table=None, cache_seqlens=None, head_dim_v=512,
                    is_fp8_kvcache=True, indices=idx)
        args.update(kw)
        return flash_mla_with_kvcache(**args)

    with pytest.raises(NotImplementedError, match="indices=None"):
        call(indices=None)
    with pytest.raises(ValueError, match="causal=True"):
        call(causal=True)
    with pytest.raises(ValueError, match=r"^q: shape \(2, 4, 512\), expected \[b, s_q, h, d_qk\]"):
        call(q=q[:, 0])
    with pytest.raises(TypeError, match="^indices: dtype torch.int64"):
        call(indices=idx.long())
    with pytest.raises(ValueError, match=r"^indices: shape \(3, 1, 8\)"):
        call(indices=torch.zeros(3, 1, 8, dtype=torch.int32))
    with pytest.raises(ValueError, match="is_fp8_kvcache=False but k_cache"):
        call(is_fp8_kvcache=False)
    with pytest.raises(ValueError, match="^k_cache: last dim 600"):
        call(k_cache=torch.zeros(2, 64, 1, 600, dtype=torch.uint8))
    with pytest.raises(ValueError, match="^k_cache .*page stride"):  # sparse_mla's kv_cache error, renamed
        call(k_cache=torch.zeros(2, 64, 1, 584, dtype=torch.uint8))
    with pytest.raises(ValueError, match="extra_k_cache and extra_indices_in_kvcache"):
        call(extra_k_cache=k_cache)
    with pytest.raises(ValueError, match=r"^topk_length: shape \(3,\)"):
        call(topk_length=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="^head_dim_v=None"):
        call(head_dim_v=None)
    with pytest.raises(ValueError, match="^kv: shape .*one kv head"):
        flash_mla_sparse_fwd(torch.randn(2, 4, 576), torch.randn(10, 2, 576), torch.zeros(2, 1, 4, dtype=torch.int32), 0.1)
    with pytest.raises(ValueError, match="^kv .*dtype torch.float32 but q is torch.bfloat16"):
        flash_mla_sparse_fwd(torch.randn(2, 4, 576).bfloat16(), torch.randn(10, 1, 576),
                             torch.zeros(2, 1, 4, dtype=torch.int32), 0.1)
