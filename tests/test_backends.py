"""Backend choice and the FlashInfer backend's argument mapping, on the CPU.

FlashInfer itself cannot run here: a fake ``flashinfer`` package (a wrapper that computes
attention in PyTorch from exactly the buffers it was planned with, and an SM120 entry point
that decodes the pages it is handed) checks the mapping end to end.
"""
import os

os.environ["TRITON_INTERPRET"] = "1"

import contextlib  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
from dataclasses import replace  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import types  # noqa: E402
import weakref  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.gen.layout import model1_page_bytes  # noqa: E402
from sparsemla.gen.spec import Config, KernelSpec  # noqa: E402
from sparsemla.gen.tuned_table import TunedEntry  # noqa: E402
from sparsemla.runtime import api, dispatch, triton_backend  # noqa: E402
from sparsemla.runtime import flashinfer_backend as fb  # noqa: E402
from sparsemla.runtime.kvcache import describe_cache, valid_mask  # noqa: E402
from sparsemla.runtime.reference import sparse_mla_reference  # noqa: E402

from helpers import rel_err  # noqa: E402


# --------------------------------------------------------------------------------------------
# A fake flashinfer package
# --------------------------------------------------------------------------------------------

class FakeMLAWrapper:
    """BatchMLAPagedAttentionWrapper in CUDA-graph mode: plan() copies into the reserved
    buffers, run() reads them (so packed indices written after plan() are what it sees) and
    returns lse in base 2, as FlashInfer does."""

    instances = []

    def __init__(self, workspace, use_cuda_graph=False, qo_indptr=None, kv_indptr=None, kv_indices=None,
                 kv_len_arr=None, backend="auto"):
        assert use_cuda_graph and backend == "fa3"
        self.qo, self.indptr, self.indices, self.lens = qo_indptr, kv_indptr, kv_indices, kv_len_arr
        self.plans = 0
        FakeMLAWrapper.instances.append(self)

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, head_dim_ckv, head_dim_kpe,
             page_size, causal, sm_scale, q_data_type, kv_data_type):
        assert page_size == 1 and causal is False and head_dim_ckv == 512
        assert qo_indptr.shape == self.qo.shape and kv_len_arr.shape == self.lens.shape  # exact, as 0.7 checks
        assert torch.equal(kv_indptr[1:] - kv_indptr[:-1], kv_len_arr)  # packed CSR
        assert kv_indices.numel() == int(kv_indptr[-1])
        self.qo.copy_(qo_indptr)
        self.indptr.copy_(kv_indptr)
        self.indices[:kv_indices.numel()].copy_(kv_indices)
        self.lens.copy_(kv_len_arr)
        self.sm_scale, self.kv_dtype, self.kpe = sm_scale, kv_data_type, head_dim_kpe
        self.plans += 1

    def run(self, q_nope, q_pe, ckv, kpe, out=None, lse=None, return_lse=False, ckv_scale=None, kpe_scale=None):
        assert ckv.dtype == kpe.dtype == self.kv_dtype and q_pe.shape[-1] == self.kpe
        if self.kv_dtype == torch.float8_e4m3fn:
            assert ckv_scale is not None and kpe_scale is not None
        cs, ks = ckv_scale or 1.0, kpe_scale or 1.0
        T = q_nope.shape[0]
        assert int(self.qo[T]) == T and int(self.qo[-1]) == T  # rows past T planned empty
        lse2 = torch.empty(q_nope.shape[:2], dtype=torch.float32)
        for t in range(T):
            a, n = int(self.indptr[t]), int(self.lens[t])
            slots = self.indices[a:a + n].long()
            v = ckv[slots, 0].float() * cs
            k = torch.cat([v, kpe[slots, 0].float() * ks], dim=1)
            s = torch.cat([q_nope[t], q_pe[t]], dim=1).float() @ k.T * self.sm_scale
            out[t] = (torch.softmax(s, 1) @ v).to(out.dtype)
            lse2[t] = torch.logsumexp(s, 1) / math.log(2)
        return (out, lse2) if return_lse else out


def fake_sm120_paged_attention(q, kv_cache, indices, output, out_lse, sm_scale, *, d_v=512, topk_length=None,
                               attn_sink=None, extra_kv_cache=None, extra_indices=None, extra_topk_length=None,
                               mid_out=None, mid_lse=None):
    """Decodes FlashMLA-style 4-D model1 pages; writes garbage into rows with nothing valid."""
    assert kv_cache.dtype == torch.uint8 and kv_cache.shape[1:] == (64, 1, 584)
    assert (mid_out is None) == (q.shape[0] > 64)
    view = describe_cache(kv_cache, "model1", 512, 512)
    xview = None if extra_kv_cache is None else describe_cache(extra_kv_cache, "model1", 512, 512)
    o, l = sparse_mla_reference(q, view, indices, sm_scale, topk_length=topk_length, attn_sink=attn_sink,
                                extra_view=xview, extra_indices=extra_indices, extra_topk_length=extra_topk_length)
    empty = torch.isinf(l)
    output.copy_(o.masked_fill(empty[..., None], 7.0))
    out_lse.copy_(l.masked_fill(empty, -123.0))


@pytest.fixture
def fake_flashinfer(monkeypatch):
    pkg = types.ModuleType("flashinfer")
    mla = types.ModuleType("flashinfer.mla")
    sm120 = types.ModuleType("flashinfer.mla._sparse_mla_sm120")
    mla.BatchMLAPagedAttentionWrapper = FakeMLAWrapper
    sm120._sparse_mla_sm120_paged_attention = fake_sm120_paged_attention
    pkg.mla, mla._sparse_mla_sm120 = mla, sm120
    for name, mod in (("flashinfer", pkg), ("flashinfer.mla", mla), ("flashinfer.mla._sparse_mla_sm120", sm120)):
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(fb, "_states", {})
    monkeypatch.setattr(fb, "_float_workspaces", {})
    monkeypatch.setattr(fb, "_WORKSPACE_BYTES", 64)
    FakeMLAWrapper.instances = []
    return FakeMLAWrapper


# --------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------

def test_valid_mask_csr_and_packing():
    idx = torch.tensor([[5, -1, 2, 9, 7],
                        [-1, -1, -1, -1, -1],
                        [1, 2, 3, 4, 100],
                        [4, -1, 6, -7, 0]], dtype=torch.int32)
    topk_length = torch.tensor([5, 5, 3, 4], dtype=torch.int32)
    valid = valid_mask(idx, topk_length, num_slots=10)
    expected = [[5, 2, 9, 7], [], [1, 2, 3], [4, 6]]
    assert valid.sum(1).tolist() == [len(e) for e in expected]
    planned = valid.sum(1, dtype=torch.int32).clamp(min=1)  # an empty row reads one entry: slot 0
    indptr = fb.csr_indptr(planned)
    assert indptr.tolist() == [0, 4, 5, 8, 10] and indptr.dtype == torch.int32
    buf = torch.full((int(indptr[-1]) + 1,), 99, dtype=torch.int32)
    fb.pack_valid_slots(idx, valid, indptr, buf)
    rows = [buf[int(indptr[t]):int(indptr[t + 1])].tolist() for t in range(4)]
    assert rows == [[5, 2, 9, 7], [0], [1, 2, 3], [4, 6]]


def test_split_q_and_cache():
    q = torch.randn(3, 4, 576, dtype=torch.bfloat16)
    q_nope, q_pe = fb.split_q(q, 512)
    assert q_nope.shape == (3, 4, 512) and q_pe.shape == (3, 4, 64)
    assert q_nope.data_ptr() == q.data_ptr() and torch.equal(q_pe, q[..., 512:])
    q_nope, q_pe = fb.split_q(q[..., :512], 512)  # NoPE: an empty rope part
    assert q_pe.shape == (3, 4, 0)

    kv = torch.randn(8, 4, 576, dtype=torch.bfloat16)  # 8 pages of 4 tokens, back to back
    view = describe_cache(kv, "auto", 576, 512)
    ckv, kpe = fb.split_cache(view)
    assert ckv.shape == (32, 1, 512) and kpe.shape == (32, 1, 64)
    assert torch.equal(ckv[13, 0], kv[3, 1, :512]) and torch.equal(kpe[13, 0], kv[3, 1, 512:])

    fp8, _ = sparsemla.quantize_kv(torch.randn(32, 512), "fp8_e4m3")
    ckv, kpe = fb.split_cache(describe_cache(fp8, "fp8_e4m3", 512, 512))
    assert ckv.dtype == torch.float8_e4m3fn and kpe.shape == (32, 1, 0)
    assert torch.equal(ckv[7, 0].view(torch.uint8), fp8[7].view(torch.uint8))

    gappy = torch.randn(8, 6, 576, dtype=torch.bfloat16)[:, :4]  # pages of 4 rows, 6 apart
    view = describe_cache(gappy, "auto", 576, 512)
    assert fb.slot_stride(view) is None
    spec = KernelSpec(num_heads=4, topk=16, page_size=4)
    assert "pages are not back to back" in fb.unsupported_reason(spec, view)


def test_natural_lse():
    lse2 = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    empty = torch.tensor([False, True])
    lse = fb.natural_lse(lse2, empty)
    assert torch.allclose(lse[0], lse2[0] * math.log(2))
    assert (lse[1] == math.inf).all()


@pytest.mark.parametrize("spec_kw,ok,why", [
    (dict(), True, None),
    (dict(d_qk=512, kv_format="fp8_e4m3"), True, None),
    (dict(has_sink=True), False, "attn_sink"),
    (dict(extra_topk=64), False, "extra_kv_cache"),
    (dict(kv_format="fp8_ds_mla"), False, "kv_format"),
    (dict(d_qk=544, d_v=512), False, "d_qk=544"),
    (dict(q_dtype="fp16", compute_dtype="fp16"), False, "q dtype"),
    (dict(arch="sm120", kv_format="model1", d_qk=512, page_size=64, has_sink=True,
          extra_topk=128, extra_page_size=64), True, None),
    (dict(arch="sm121", kv_format="model1", d_qk=512, page_size=256), False, "64-token pages"),
    (dict(arch="sm120"), False, "model1"),
    (dict(arch="sm120", kv_format="model1", d_qk=512, page_size=64, has_sink=True, return_lse=True),
     False, "lse"),
])
def test_supports(spec_kw, ok, why):
    spec = KernelSpec(**{"num_heads": 16, "topk": 256, **spec_kw})
    assert fb.supports(spec) is ok
    reason = fb.unsupported_reason(spec)
    assert (reason is None) == ok and (why is None or why in reason)


def test_sm120_argument_mapping():
    T, H, topk, xtopk = 3, 5, 100, 40
    pages = sparsemla.quantize_kv(torch.randn(256, 512), "model1", page_size=64)
    xpages = sparsemla.quantize_kv(torch.randn(128, 512), "model1", page_size=64)
    view = describe_cache(pages, "model1", 512, 512, page_size=64)
    xview = describe_cache(xpages, "model1", 512, 512, page_size=64)
    q = torch.randn(T, H, 512, dtype=torch.bfloat16)
    idx = torch.randint(0, 256, (T, topk), dtype=torch.int32)
    xidx = torch.randint(0, 128, (T, xtopk), dtype=torch.int32)
    out, lse = torch.empty(T, H, 512, dtype=torch.bfloat16), torch.empty(T, H)
    tl = torch.tensor([50, -3, topk + 1], dtype=torch.int32)  # (clamped to each list: [0, topk], [0, xtopk])
    sink = torch.zeros(H)
    args, kw = fb.sm120_arguments(q, view, idx, 0.1, out, lse, topk_length=tl, attn_sink=sink, extra_view=xview,
                                  extra_indices=xidx, extra_topk_length=tl)
    q_a, kv, idx_a, out_a, lse_a, scale = args
    pb = model1_page_bytes(64)
    assert q_a is q and idx_a is idx and out_a is out and lse_a is lse and scale == 0.1
    assert kv.shape == (4, 64, 1, 584) and kv.stride() == (pb, 584, 584, 1) and kv.data_ptr() == pages.data_ptr()
    assert kw["extra_kv_cache"].shape == (2, 64, 1, 584) and kw["extra_kv_cache"].data_ptr() == xpages.data_ptr()
    assert kw["extra_indices"] is xidx and kw["attn_sink"] is sink and kw["d_v"] == 512
    assert kw["topk_length"].tolist() == [50, 0, topk] and kw["extra_topk_length"].tolist() == [40, 0, xtopk]
    assert kw["mid_out"].shape == (T, H, 2 + 1, 512) and kw["mid_out"].dtype == torch.bfloat16  # ceil(100/64)+ceil(40/64)
    assert kw["mid_lse"].shape == (T, H, 3) and kw["mid_lse"].dtype == torch.float32
    q65 = torch.randn(65, H, 512, dtype=torch.bfloat16)
    _, kw = fb.sm120_arguments(q65, view, idx[:1].expand(65, topk), 0.1, None, None)
    assert kw["mid_out"] is None and kw["mid_lse"] is None  # prefill: no split-K scratch


# --------------------------------------------------------------------------------------------
# run_flashinfer through the fake package
# --------------------------------------------------------------------------------------------

def _problem(kv_format, d_qk, T, H, topk, slots, page_size=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    kv = torch.randn(slots, d_qk, generator=gen)
    kw = {}
    if kv_format == "auto":
        cache = sparsemla.quantize_kv(kv.to(torch.bfloat16), "auto", page_size=page_size)
    else:
        cache, kw["kv_scale"] = sparsemla.quantize_kv(kv, "fp8_e4m3", page_size=page_size)
    q = torch.randn(T, H, d_qk, generator=gen).to(torch.bfloat16)
    idx = torch.randint(0, slots, (T, topk), generator=gen, dtype=torch.int32)
    idx[torch.rand(T, topk, generator=gen) < 0.3] = -1
    idx[1] = -1  # nothing valid
    topk_length = torch.randint(1, topk + 1, (T,), generator=gen, dtype=torch.int32)
    return q, cache, kw, idx, topk_length


def _run(q, cache, kv_format, idx, topk_length, kw, scale=0.07):
    T, H, d_qk = q.shape
    view = describe_cache(cache, kv_format, d_qk, 512, q_dtype=q.dtype, **kw)
    spec = KernelSpec(kv_format=kv_format, d_qk=d_qk, num_heads=H, topk=idx.shape[1], page_size=view.page_size,
                      return_lse=True)
    out, lse = torch.empty(T, H, 512, dtype=q.dtype), torch.empty(T, H)
    fb.run_flashinfer(spec, q, view, idx, scale, out, lse, topk_length=topk_length)
    ref, ref_lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=scale, kv_format=kv_format, topk_length=topk_length,
                                        return_lse=True, backend="torch", **kw)
    return out, lse, ref, ref_lse


@pytest.mark.parametrize("kv_format,d_qk,page_size", [("auto", 576, None), ("auto", 512, 8),
                                                      ("fp8_e4m3", 576, 4), ("fp8_e4m3", 512, None)])
def test_run_flashinfer_sm90_mapping(fake_flashinfer, kv_format, d_qk, page_size):
    q, cache, kw, idx, tl = _problem(kv_format, d_qk, T=5, H=3, topk=24, slots=64, page_size=page_size)
    out, lse, ref, ref_lse = _run(q, cache, kv_format, idx, tl, kw)
    assert rel_err(out, ref) < 1e-2
    assert (out[1] == 0).all() and (lse[1] == math.inf).all()
    fin = torch.isfinite(ref_lse)
    assert torch.equal(fin, torch.isfinite(lse)) and (lse[fin] - ref_lse[fin]).abs().max() < 1e-4


def test_plan_caching(fake_flashinfer):
    q, cache, kw, idx, tl = _problem("auto", 576, T=4, H=2, topk=16, slots=50)
    _run(q, cache, "auto", idx, tl, kw)
    (w,) = fake_flashinfer.instances
    assert w.plans == 1
    # Same valid counts, other slots (a permutation of each row): no re-plan, new results.
    idx2 = idx.flip(1)
    tl2 = torch.full_like(tl, 16)
    _run(q, cache, "auto", idx, tl2, kw)
    plans = w.plans
    out, _, ref, _ = _run(q, cache, "auto", idx2, tl2, kw)
    assert w.plans == plans and rel_err(out, ref) < 1e-2
    # Other counts: re-plan on the same wrapper; more tokens than its capacity: a new wrapper.
    _run(q, cache, "auto", idx, torch.full_like(tl, 3), kw)
    assert w.plans == plans + 1 and len(fake_flashinfer.instances) == 1
    q40, _, _, idx40, tl40 = _problem("auto", 576, T=40, H=2, topk=16, slots=50)
    out, _, ref, _ = _run(q40, cache, "auto", idx40, tl40, kw)
    assert len(fake_flashinfer.instances) == 2 and rel_err(out, ref) < 1e-2


def test_run_flashinfer_sm120_mapping(fake_flashinfer):
    T, H, topk, xtopk = 3, 4, 40, 24
    gen = torch.Generator().manual_seed(1)
    pages = sparsemla.quantize_kv(torch.randn(128, 512, generator=gen), "model1", page_size=64)
    xpages = sparsemla.quantize_kv(torch.randn(64, 512, generator=gen), "model1", page_size=64)
    q = torch.randn(T, H, 512, generator=gen).to(torch.bfloat16)
    idx = torch.randint(0, 128, (T, topk), generator=gen, dtype=torch.int32)
    xidx = torch.randint(0, 64, (T, xtopk), generator=gen, dtype=torch.int32)
    idx[2], xidx[2] = -1, -1
    tl = torch.tensor([topk, 5, topk], dtype=torch.int32)
    sink = torch.tensor([0.5, -1.0, float("-inf"), 2.0])
    view = describe_cache(pages, "model1", 512, 512, page_size=64)
    xview = describe_cache(xpages, "model1", 512, 512, page_size=64)
    spec = KernelSpec(kv_format="model1", d_qk=512, num_heads=H, topk=topk, page_size=64, arch="sm120",
                      has_sink=True, extra_topk=xtopk, extra_page_size=64)
    out = torch.empty(T, H, 512, dtype=torch.bfloat16)
    fb.run_flashinfer(spec, q, view, idx, 0.05, out, None, topk_length=tl, attn_sink=sink, extra_view=xview,
                      extra_indices=xidx)
    ref = sparsemla.sparse_mla(q, pages, idx, sm_scale=0.05, kv_format="model1", d_v=512, page_size=64,
                               topk_length=tl, attn_sink=sink, extra_kv_cache=xpages, extra_indices=xidx,
                               extra_page_size=64, backend="torch")
    assert rel_err(out, ref) < 1e-2 and (out[2] == 0).all()


def test_run_flashinfer_errors(fake_flashinfer, monkeypatch):
    q, cache, kw, idx, tl = _problem("auto", 576, T=2, H=2, topk=8, slots=16)
    view = describe_cache(cache, "auto", 576, 512)
    spec = KernelSpec(num_heads=2, topk=8, has_sink=True)
    with pytest.raises(ValueError, match="backend='flashinfer' cannot run .*attn_sink"):
        fb.run_flashinfer(spec, q, view, idx, 0.1, torch.empty(2, 2, 512, dtype=torch.bfloat16), None)
    monkeypatch.delitem(sys.modules, "flashinfer")
    monkeypatch.setitem(sys.modules, "flashinfer", None)  # import flashinfer -> ImportError
    with pytest.raises(ImportError, match="flashinfer package, which is not installed"):
        fb.run_flashinfer(KernelSpec(num_heads=2, topk=8), q, view, idx, 0.1,
                          torch.empty(2, 2, 512, dtype=torch.bfloat16), None)


# --------------------------------------------------------------------------------------------
# Backend choice in sparse_mla
# --------------------------------------------------------------------------------------------

class _Called(Exception):
    pass


def _small():
    q = torch.randn(2, 3, 576)
    kv = torch.randn(20, 576)
    idx = torch.randint(0, 20, (2, 8), dtype=torch.int32)
    return q, kv, idx


def test_env_forces_backend(monkeypatch):
    q, kv, idx = _small()

    def spy(*a, **k):
        raise _Called

    monkeypatch.setattr(triton_backend, "run_triton", spy)
    monkeypatch.setenv("SPARSEMLA_BACKEND", "triton")
    with pytest.raises(_Called):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1)  # auto on the CPU would be the reference
    sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1, backend="torch")  # an explicit backend wins
    monkeypatch.setenv("SPARSEMLA_BACKEND", "torch")
    ref = sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1)
    monkeypatch.setenv("SPARSEMLA_BACKEND", "auto")
    assert torch.equal(sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1), ref)
    monkeypatch.setenv("SPARSEMLA_BACKEND", "cuda")
    with pytest.raises(ValueError, match="SPARSEMLA_BACKEND='cuda': expected one of"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1)
    monkeypatch.setenv("SPARSEMLA_BACKEND", "flashinfer")
    with pytest.raises(ValueError, match="backend='flashinfer' needs CUDA tensors"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1)


def test_backend_argument_errors():
    q, kv, idx = _small()
    with pytest.raises(ValueError, match="backend='fa3': expected one of .*'flashinfer'"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1, backend="fa3")
    with pytest.raises(ValueError, match="backend='flashinfer' needs CUDA tensors"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1, backend="flashinfer")


def test_auto_backend_follows_tuned_table(monkeypatch):
    spec = KernelSpec(num_heads=16, topk=256)
    dev = torch.device("cpu")
    entry = {}
    monkeypatch.setattr(dispatch, "lookup", lambda s, T, d: entry.get("e"), raising=False)
    monkeypatch.setattr(fb, "available", lambda: True)
    assert api._auto_backend(spec, 4, dev, None) == "triton"  # no entry
    entry["e"] = {"backend": "flashinfer"}
    assert api._auto_backend(spec, 4, dev, None) == "flashinfer"
    entry["e"] = TunedEntry(Config(), 1, backend="flashinfer")  # what dispatch.lookup returns
    assert api._auto_backend(spec, 4, dev, None) == "flashinfer"
    assert api._auto_backend(KernelSpec(num_heads=16, topk=256, has_sink=True), 4, dev, None) == "triton"
    monkeypatch.setattr(fb, "available", lambda: False)
    assert api._auto_backend(spec, 4, dev, None) == "triton"
    monkeypatch.setattr(fb, "available", lambda: True)
    entry["e"] = {"backend": "triton"}
    assert api._auto_backend(spec, 4, dev, None) == "triton"
    monkeypatch.delattr(dispatch, "lookup")
    assert api._auto_backend(spec, 4, dev, None) == "triton"


def test_info(capsys, monkeypatch):
    from sparsemla.runtime import dispatch
    from sparsemla.runtime.info import info_main
    monkeypatch.delenv("SPARSEMLA_GPU", raising=False)
    monkeypatch.setenv("SPARSEMLA_ARCH", "sm90")
    dispatch.clear_cache()
    assert info_main([]) == 0
    text = capsys.readouterr().out
    assert "no GPU" in text and "arch: sm" in text and "triton " in text
    assert ("flashinfer not installed" in text) != fb.available()
    assert "tuned table: NVIDIA_H200:" in text
    # Without a GPU, $SPARSEMLA_GPU names the tables the runtime reads, as it does for the kernels' configs.
    monkeypatch.setenv("SPARSEMLA_GPU", "NVIDIA H800")
    dispatch.clear_cache()
    try:
        assert info_main([]) == 0
        text = capsys.readouterr().out
    finally:
        dispatch.clear_cache()
    assert "SPARSEMLA_GPU='NVIDIA H800'" in text and "tuned table: none for NVIDIA_H800" in text
    assert "tuned table: NVIDIA_H100_80GB_HBM3:" in text and "same SMs and memory" in text
    assert "tuned table: NVIDIA_H200:" in text and "reference part of sm90" in text


def test_q_rows_the_gluon_kernel_copies_by_cp_async():
    # The Gluon kernel copies Q 16 bytes at a time: rows with a unit last stride, 8-element row strides.
    # The runtime copies any other q before launching it (checked with such a q on the GPU:
    # benchmarks/gpu_correctness.py).
    from sparsemla.runtime.triton_backend import _cp_async_rows
    q = torch.zeros(4, 16, 576, dtype=torch.bfloat16)
    assert _cp_async_rows(q) and _cp_async_rows(q.transpose(0, 1))
    assert _cp_async_rows(torch.zeros(4, 16, 640, dtype=torch.bfloat16)[..., :576])
    assert not _cp_async_rows(torch.zeros(4, 16, 579, dtype=torch.bfloat16)[..., :576])
    assert not _cp_async_rows(torch.zeros(4, 576, 16, dtype=torch.bfloat16).transpose(1, 2))


def test_combine_is_a_programmatic_dependent_only_of_gluon_grids_that_leave_sms_free(monkeypatch):
    # runtime/triton_backend._pdl: PDL for the combine behind a Gluon kernel whose grid takes at most half
    # the SMs of an sm90+ GPU, or one wave with at most 4 splits or with a combine of at most one program
    # per SM (H200, sessions 20 and 23: faster there; slower with 128 programs on 132 SMs, 8-32 splits and
    # a combine of many programs per SM).
    props = types.SimpleNamespace(major=9, multi_processor_count=132)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(triton_backend, "interpreting", lambda: False)
    cuda = torch.device("cuda", 0)
    gluon, triton = Config(16, 64, 32, 8, 2, gluon=True), Config(16, 64, 32, 8, 2)
    assert triton_backend._pdl(gluon, 64, 2048, cuda) and triton_backend._pdl(gluon, 66, 2048, cuda)
    assert not triton_backend._pdl(gluon, 67, 2048, cuda) and not triton_backend._pdl(gluon, 128, 133, cuda)
    assert triton_backend._pdl(gluon, 128, 128, cuda) and triton_backend._pdl(gluon, 132, 132, cuda)
    assert not triton_backend._pdl(gluon, 133, 128, cuda)
    few = Config(64, 64, 4, 8, 2, gluon=True)  # 4 splits: one wave is enough
    assert triton_backend._pdl(few, 128, 2048, cuda) and triton_backend._pdl(few, 132, 2048, cuda)
    assert not triton_backend._pdl(few, 133, 2048, cuda)
    assert not triton_backend._pdl(triton, 32, 32, cuda)  # the Triton kernel does not let it launch early
    assert not triton_backend._pdl(gluon, 32, 32, torch.device("cpu"))
    props.major = 8
    assert not triton_backend._pdl(gluon, 32, 32, cuda)
    props.major = 9
    monkeypatch.setattr(triton_backend, "_PDL", False)  # SPARSEMLA_PDL=0
    assert not triton_backend._pdl(gluon, 32, 32, cuda)


def test_a_pdl_combine_reserves_shared_memory_so_its_early_programs_spread(monkeypatch):
    # runtime/triton_backend._combine_reserve: behind PDL, a combine of at most 2 programs per SM whose
    # programs outnumber the SMs the attention grid leaves free reserves a share of an SM's shared memory so
    # that only that many fit on one (H200, session 23).
    props = types.SimpleNamespace(multi_processor_count=132, shared_memory_per_multiprocessor=233472)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    cuda = torch.device("cuda", 0)
    one = triton_backend._combine_reserve(True, 128, 128, cuda)  # 128 programs behind 128 (4 SMs free)
    two = triton_backend._combine_reserve(True, 64, 264, cuda)  # 264 behind 64
    assert (one, two) == (116736, 77824)
    # with the 1 KB the hardware adds per program: one per SM fits, two do not; two fit, three do not
    assert one + 1024 <= 233472 < 2 * (one + 1024) and 2 * (two + 1024) <= 233472 < 3 * (two + 1024)
    assert triton_backend._combine_reserve(True, 64, 69, cuda) == 116736  # 69 programs, 68 free SMs
    assert triton_backend._combine_reserve(True, 64, 68, cuda) == 0  # the free SMs take them all
    assert triton_backend._combine_reserve(True, 64, 265, cuda) == 0  # 3 per SM: no cap
    assert triton_backend._combine_reserve(False, 128, 128, cuda) == 0  # launched after the grid: nothing to cap


def test_the_combine_issues_its_loads_together_where_it_has_one_program_per_sm(monkeypatch):
    # runtime/triton_backend._parts_first: PARTS_FIRST where the combine's grid has at most one program per SM
    # (H200, session 24: faster with 32-128 programs, slower with 256-512), on sm90, where it was measured.
    props = types.SimpleNamespace(major=9, multi_processor_count=132)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(triton_backend, "interpreting", lambda: False)
    cuda = torch.device("cuda", 0)
    assert triton_backend._parts_first(32, cuda) and triton_backend._parts_first(132, cuda)
    assert not triton_backend._parts_first(133, cuda) and not triton_backend._parts_first(256, cuda)
    assert not triton_backend._parts_first(32, torch.device("cpu"))
    props.major = 12
    assert not triton_backend._parts_first(32, cuda)
    props.major = 9
    monkeypatch.setattr(triton_backend, "_PARTS_FIRST", False)  # SPARSEMLA_PARTS_FIRST=0
    assert not triton_backend._parts_first(32, cuda)
    monkeypatch.setattr(triton_backend, "_PARTS_FIRST", True)
    monkeypatch.setattr(triton_backend, "interpreting", lambda: True)
    assert not triton_backend._parts_first(32, cuda)


def test_the_persistent_kernel_takes_wide_bf16_grids_with_more_units_than_sms(monkeypatch):
    # runtime/triton_backend._persistent: the wide Gluon kernel with a bf16 cache and no split-K, where its units
    # fill at least 16 rounds of the SMs with rope, 48 without (H200, sessions 24 and 27: faster at prefill sizes,
    # not at 256-512 units, nor without rope at 4096); on a GPU, unless SPARSEMLA_PERSISTENT=0.
    props = types.SimpleNamespace(multi_processor_count=132)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(triton_backend, "interpreting", lambda: False)
    monkeypatch.setattr(triton_backend, "_PERSISTENT", True)
    cuda, wide = torch.device("cuda", 0), Config(64, 64, 1, 8, 2, gluon=True)
    bf16, fp8 = KernelSpec(arch="sm90"), KernelSpec(kv_format="fp8_e4m3", page_size=16, arch="sm90")
    assert triton_backend._persistent(bf16, wide, 16 * 132, cuda) and not triton_backend._persistent(bf16, wide, 2111, cuda)
    nope = KernelSpec(d_qk=512, arch="sm90")
    assert triton_backend._persistent(nope, wide, 8192, cuda) and not triton_backend._persistent(nope, wide, 4096, cuda)
    assert not triton_backend._persistent(fp8, wide, 8192, cuda)
    assert not triton_backend._persistent(bf16, Config(64, 64, 2, 8, 2, gluon=True), 8192, cuda)  # split-K
    assert not triton_backend._persistent(bf16, Config(16, 64, 1, 8, 2, gluon=True), 8192, cuda)  # narrow
    assert not triton_backend._persistent(bf16, Config(64, 64, 1, 8, 2), 8192, cuda)  # the Triton kernel
    assert not triton_backend._persistent(bf16, wide, 8192, torch.device("cpu"))
    monkeypatch.setattr(triton_backend, "_PERSISTENT", False)  # SPARSEMLA_PERSISTENT=0
    assert not triton_backend._persistent(bf16, wide, 8192, cuda)


def test_the_wide_kernel_writes_through_a_stage_without_split_k(monkeypatch):
    # runtime/triton_backend._staged_out: the wide Gluon kernel without split-K, persistent or not (H200, sessions
    # 24 and 27: faster in every row timed), unless SPARSEMLA_STAGED_OUT=0.
    monkeypatch.setattr(triton_backend, "_STAGED_OUT", True)
    wide = Config(64, 64, 1, 8, 2, gluon=True)
    assert triton_backend._staged_out(wide, False) and triton_backend._staged_out(wide, True)
    assert not triton_backend._staged_out(Config(64, 64, 2, 8, 2, gluon=True), False)  # split-K partials
    assert not triton_backend._staged_out(Config(16, 64, 1, 8, 2, gluon=True), False)  # narrow
    assert not triton_backend._staged_out(Config(64, 64, 1, 8, 2), False)  # the Triton kernel
    monkeypatch.setattr(triton_backend, "_STAGED_OUT", False)  # SPARSEMLA_STAGED_OUT=0
    assert not triton_backend._staged_out(wide, False)


def test_the_gluon_fields_the_tools_compile_are_the_runtimes_rules(monkeypatch):
    # runtime/triton_backend.gluon_fields (benchmarks/compile_report.py, ptx_same.py): persistent by persistent_for,
    # staged without split-K; nothing for split-K or the narrow kernel (the tail split and the wait, on by default,
    # have tests of their own below).
    monkeypatch.setattr(triton_backend, "_PERSISTENT", True)
    monkeypatch.setattr(triton_backend, "_STAGED_OUT", True)
    monkeypatch.setattr(triton_backend, "_TAIL_SPLIT", False)
    monkeypatch.setattr(triton_backend, "_PDL_WAIT", False)
    bf16, wide = KernelSpec(arch="sm90"), Config(64, 64, 1, 8, 2, gluon=True)
    assert triton_backend.gluon_fields(bf16, wide, 16 * 132, 132) == {"persistent": True, "staged_out": True}
    assert triton_backend.gluon_fields(bf16, wide, 16 * 132 - 1, 132) == {"staged_out": True}
    assert triton_backend.gluon_fields(KernelSpec(d_qk=512, arch="sm90"), wide, 4096, 132) == {"staged_out": True}
    assert triton_backend.gluon_fields(KernelSpec(d_qk=512, arch="sm90"), wide, 8192, 132) == \
        {"persistent": True, "staged_out": True}
    assert triton_backend.gluon_fields(bf16, Config(64, 64, 2, 8, 2, gluon=True), 8192, 132) == {}
    assert triton_backend.gluon_fields(bf16, Config(16, 64, 1, 8, 2, gluon=True), 8192, 132) == {}


def test_the_persistent_kernel_splits_only_its_last_rounds_units():
    # runtime/triton_backend.tail_split_for (SPARSEMLA_TAIL_SPLIT=1; GluonKernel.tail_split): (whole tokens, splits)
    f = triton_backend.tail_split_for
    assert f(4096, 2, 32, 132) == (4092, 16)  # 8184 units are 62 rounds; 8 more, 16 ways, fill a 63rd
    assert f(4096, 1, 32, 132) == (4092, 16)
    assert f(8192, 2, 32, 132) == (8184, 8)
    assert f(1060, 2, 4, 132) == (1056, 4)  # no more splits than tiles
    assert f(1056, 2, 4, 132) is None  # whole rounds
    assert f(1100, 2, 32, 132) is None  # 88 units in the last round: not two splits each
    assert f(70, 3, 32, 100) == (66, 8)  # whole tokens: 200 units of whole rounds hold 66 tokens and 2 units
    for T, hb, tiles, sms in ((T, hb, tiles, sms) for T in range(1, 400, 7) for hb in (1, 2, 3)
                              for tiles in (1, 4, 32) for sms in (78, 132)):
        got = f(T, hb, tiles, sms)
        if got is not None:
            whole, splits = got
            assert whole * hb <= T * hb // sms * sms and 2 <= splits <= min(tiles, 16), (T, hb, tiles, sms, got)
            assert (T - whole) * hb * splits <= sms, (T, hb, tiles, sms, got)  # the split units fit one round


def test_tail_split_is_a_persistent_staged_variant_and_a_runtime_option(monkeypatch):
    from sparsemla.gen.gluon import GluonKernel
    spec = KernelSpec(arch="sm90")
    unit = GluonKernel(spec, 64, persistent=True, staged_out=True, tail_split=True)
    assert unit.key.endswith("-ps-so-ts"), unit.key
    for kw in (dict(persistent=True), dict(staged_out=True)):
        with pytest.raises(ValueError, match="tail_split=True: expected persistent=True and staged_out=True"):
            GluonKernel(spec, 64, tail_split=True, **kw)
    monkeypatch.setattr(triton_backend, "_PERSISTENT", True)
    monkeypatch.setattr(triton_backend, "_STAGED_OUT", True)
    monkeypatch.setattr(triton_backend, "_PDL_WAIT", False)
    wide = Config(64, 64, 1, 8, 2, gluon=True)
    assert triton_backend._TAIL_SPLIT == (os.environ.get("SPARSEMLA_TAIL_SPLIT", "1") != "0")  # on by default
    monkeypatch.setattr(triton_backend, "_TAIL_SPLIT", False)  # SPARSEMLA_TAIL_SPLIT=0
    assert "tail_split" not in triton_backend.gluon_fields(spec, wide, 8192, 132)
    monkeypatch.setattr(triton_backend, "_TAIL_SPLIT", True)
    assert triton_backend.gluon_fields(spec, wide, 8192, 132) == \
        {"persistent": True, "staged_out": True, "tail_split": True}
    assert triton_backend.gluon_fields(spec, wide, 2 * 1056, 132) == {"persistent": True, "staged_out": True}
    monkeypatch.setattr(triton_backend, "_STAGED_OUT", False)
    assert triton_backend.gluon_fields(spec, wide, 8192, 132) == {"persistent": True}


def test_pdl_wait_is_a_runtime_option_of_every_gluon_kernel(monkeypatch):
    # GluonKernel.pdl_wait (on by default; SPARSEMLA_PDL_WAIT=0 turns it off): every Gluon launch waits for the
    # stream's previous kernel, whose end its launch overlaps; the module asks for launch_pdl
    from sparsemla.gen.gluon import GluonKernel
    spec, narrow = KernelSpec(num_heads=16, arch="sm90"), Config(16, 64, 4, 8, 2, gluon=True)
    assert triton_backend._PDL_WAIT == (os.environ.get("SPARSEMLA_PDL_WAIT", "1") != "0")
    monkeypatch.setattr(triton_backend, "_PARTS_BF16", False)
    monkeypatch.setattr(triton_backend, "_PDL_WAIT", False)
    assert "pdl_wait" not in triton_backend.gluon_fields(spec, narrow, 64, 132)
    monkeypatch.setattr(triton_backend, "_PDL_WAIT", True)
    assert triton_backend.gluon_fields(spec, narrow, 64, 132) == {"pdl_wait": True}
    assert triton_backend.gluon_fields(spec, Config(16, 64, 4, 8, 2), 64, 132) == {}  # the Triton kernel
    assert GluonKernel(spec, 16, pdl_wait=True).key.endswith("-pw")


def test_the_raw_fp8_kernel_is_the_rule_for_16_head_fp8_programs_without_splits(monkeypatch):
    # GluonKernel.raw (session 42, fp8_ds_mla since session 43; SPARSEMLA_RAW_FP8=0 turns the rule off): a Gluon config
    # with an fp8_e4m3 or fp8_ds_mla cache, 16 heads a program, one split and no extra cache runs the raw-row kernel;
    # any other runs as before, and a raw kernel asked for elsewhere is refused with what it lacks
    from sparsemla.gen.gluon import GluonKernel
    monkeypatch.setattr(triton_backend, "_RAW_FP8", True)
    monkeypatch.setattr(triton_backend, "_PDL_WAIT", False)
    fp8 = KernelSpec(kv_format="fp8_e4m3", num_heads=16, arch="sm90")
    narrow = Config(16, 64, 1, 8, 1, gluon=True)
    assert triton_backend.raw_for(fp8, narrow, 1)
    assert triton_backend.gluon_fields(fp8, narrow, 256, 132) == {"raw": True}
    assert triton_backend.raw_for(fp8, Config(16, 64, 1, 12, 2, gluon=True), 1)  # (its tiling is its own)
    assert not triton_backend.raw_for(fp8, Config(16, 64, 2, 8, 2, gluon=True), 2)
    assert not triton_backend.raw_for(fp8, narrow, 2)  # (an extra cache's splits)
    assert not triton_backend.raw_for(fp8, Config(32, 64, 1, 8, 2, gluon=True), 1)
    assert not triton_backend.raw_for(fp8, Config(16, 64, 1, 8, 2), 1)  # the Triton kernel
    ds = KernelSpec(kv_format="fp8_ds_mla", num_heads=16, arch="sm90", page_size=64)
    assert triton_backend.raw_for(ds, narrow, 1) and not triton_backend.raw_for(ds, narrow, 2)
    # (max_logits too: one program sees a token's whole list for its heads, so a store writes it)
    assert triton_backend.raw_for(replace(ds, return_lse=True, max_logits=True), narrow, 1)
    assert GluonKernel(replace(fp8, return_lse=True, max_logits=True), 16, raw=True).raw
    for other in (KernelSpec(num_heads=16, arch="sm90"), KernelSpec(kv_format="model1", d_qk=512, num_heads=16,
                                                                    arch="sm90", page_size=64),
                  KernelSpec(kv_format="fp8_e4m3", num_heads=16, arch="sm90", extra_topk=128)):
        assert not triton_backend.raw_for(other, narrow, 1)
    monkeypatch.setattr(triton_backend, "_RAW_FP8", False)
    assert not triton_backend.raw_for(fp8, narrow, 1) and triton_backend.gluon_fields(fp8, narrow, 256, 132) == {}
    assert GluonKernel(fp8, 16, raw=True).key.endswith("-gluon-h16-raw")
    assert GluonKernel(fp8, 16, raw=True).template == "sparse_mla_gluon_raw.py.jinja"
    for spec, bh, why in ((KernelSpec(num_heads=16, arch="sm90"), 16, "kv_format in"), (fp8, 32, "block_h 16"),
                          (KernelSpec(kv_format="fp8_e4m3", num_heads=16, arch="sm90", extra_topk=128), 16,
                           "no extra cache")):
        with pytest.raises(ValueError, match=why):
            GluonKernel(spec, bh, raw=True)


def test_the_raw_kernels_l2_prefetch_is_a_variant_of_its_own():
    # GluonKernel.l2_ahead (session 48): the raw kernel's G prefetches tile j + 1 into L2 as it gathers tile j; 0 (none)
    # is the shipped kernel, 1 the kernel of sessions 42-47; l2_late issues it after the tile's copies; refused
    # elsewhere, and further ahead
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.render import render_source
    fp8 = KernelSpec(kv_format="fp8_e4m3", num_heads=16, arch="sm90")
    shipped = GluonKernel(fp8, 16, raw=True)
    assert shipped.l2_ahead == 0 and shipped.key.endswith("-gluon-h16-raw")
    assert "_prefetch_tile(" not in render_source(shipped)
    before = GluonKernel(fp8, 16, raw=True, l2_ahead=1)
    assert before.key.endswith("-gluon-h16-raw-pf1") and "hi, j + 1)" in render_source(before)
    assert render_source(before).index("hi, j + 1)") < render_source(before).index("_cp_async(stage_r")
    late = render_source(GluonKernel(fp8, 16, raw=True, l2_ahead=1, l2_late=True))  # after the tile's copies
    assert late.index("_cp_async(stage_r") < late.index("hi, j + 1)")
    for kernel in (dict(spec=fp8, block_h=16, l2_ahead=2), dict(spec=fp8, block_h=16, raw=True, l2_ahead=2),
                   dict(spec=fp8, block_h=16, raw=True, l2_late=True)):
        with pytest.raises(ValueError, match="l2_ahead=|l2_late="):
            GluonKernel(**kernel)


def test_the_dequantizing_kernels_prefetch_is_on_in_the_wide_kernel_only():
    # GluonKernel.c_prefetch (session 48): group C prefetches the next tile into L2 in the wide kernel, not in the
    # narrow one, by the rule measured on an H100; either may be asked for (the key names a departure from the rule).
    # Only the dequantizing kernels of an fp8 cache have a group C
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.render import render_source
    m1 = KernelSpec(kv_format="model1", d_qk=512, num_heads=64, arch="sm90", page_size=64)
    narrow, wide = GluonKernel(m1, 16), GluonKernel(m1, 64)
    assert not narrow.c_prefetch and "_prefetch_l2(kv_fp8" not in render_source(narrow)
    assert wide.c_prefetch and "_prefetch_l2(kv_fp8" in render_source(wide)
    assert "cp" not in narrow.key.split("-gluon-")[1] and "cp" not in wide.key.split("-gluon")[1]
    on, off = GluonKernel(m1, 16, c_prefetch=True), GluonKernel(m1, 64, c_prefetch=False)
    assert "_prefetch_l2(kv_fp8" in render_source(on) and on.key.endswith("-cp")
    assert "_prefetch_l2(kv_fp8" not in render_source(off) and off.key.endswith("-ncp")
    fp8 = KernelSpec(kv_format="fp8_e4m3", num_heads=16, arch="sm90")
    assert GluonKernel(fp8, 16, raw=True).c_prefetch  # (no group C: the field means nothing there)
    assert GluonKernel(KernelSpec(num_heads=16, arch="sm90"), 16).c_prefetch
    for kernel in (dict(spec=KernelSpec(num_heads=16, arch="sm90"), block_h=16), dict(spec=fp8, block_h=16, raw=True)):
        with pytest.raises(ValueError, match="c_prefetch=False"):
            GluonKernel(**kernel, c_prefetch=False)


def test_bfloat16_partials_are_the_gluon_kernels_split_k_rule(monkeypatch):
    # runtime/triton_backend.parts_bf16_for (SPARSEMLA_PARTS_BF16): the Gluon kernels' split-K launches, narrow and
    # wide, write bfloat16 partials (GluonKernel.parts_bf16) for the combine's PARTS_BF16; not with one split (no
    # partials), not the Triton kernel's, and never where the wide kernel merges its 2 splits itself (FUSED); the
    # combine then runs one warp per 256 columns
    from sparsemla.gen.gluon import GluonKernel
    monkeypatch.setattr(triton_backend, "_PDL_WAIT", False)
    spec = KernelSpec(num_heads=128, arch="sm90")
    assert triton_backend._PARTS_BF16 == (os.environ.get("SPARSEMLA_PARTS_BF16", "1") != "0")
    monkeypatch.setattr(triton_backend, "_PARTS_BF16", True)
    for cfg, want in ((Config(16, 64, 16, 8, 2, gluon=True), True), (Config(32, 64, 2, 8, 2, gluon=True), True),
                      (Config(16, 64, 1, 8, 2, gluon=True), False), (Config(64, 64, 4, 8, 2, gluon=True), True),
                      (Config(64, 64, 1, 8, 2, gluon=True), False), (Config(16, 64, 16, 8, 2), False)):
        assert triton_backend.gluon_fields(spec, cfg, 128 * cfg.num_splits, 132).get("parts_bf16", False) == want, cfg
    wide, fused = Config(64, 64, 4, 8, 2, gluon=True), Config(64, 64, 2, 8, 2, gluon=True)
    assert triton_backend.gluon_fields(spec, wide, 1 * 2 * 4, 132) == {"parts_bf16": True}
    assert triton_backend.fused_for(fused, 1, 128) and triton_backend.gluon_fields(spec, fused, 1 * 2 * 2, 132) == {}
    monkeypatch.setattr(triton_backend, "_PARTS_BF16", False)
    assert triton_backend.gluon_fields(spec, Config(16, 64, 16, 8, 2, gluon=True), 128, 132) == {}
    assert triton_backend.gluon_fields(spec, wide, 1 * 2 * 4, 132) == {}
    assert GluonKernel(spec, 16, parts_bf16=True).key.endswith("-pb")
    assert GluonKernel(spec, 64, parts_bf16=True).key.endswith("-pb")
    with pytest.raises(ValueError, match="parts_bf16=True: expected persistent=False"):
        GluonKernel(spec, 64, persistent=True, parts_bf16=True)
    assert [triton_backend.combine_warps(dv, True) for dv in (16, 256, 512)] == [1, 1, 2]
    assert triton_backend.combine_warps(512, False) == 4


def test_the_fused_combine_takes_full_64_head_gluon_programs_with_2_splits(monkeypatch):
    # runtime/triton_backend._fused: the last split of each token and head block merges the partials in the
    # Gluon kernel (no combine kernel) for 64-head programs, none masked, with 2 splits (H200, session 21:
    # faster there, slower with 32 heads in a 64-head program, 16- or 32-head programs, or more splits),
    # while the counters of its token and head blocks fit in the workspace's prefix (4 floats each).
    from sparsemla.gen.gluon import SYNC_FLOATS
    monkeypatch.setattr(triton_backend, "interpreting", lambda: False)
    for splits, want in ((1, False), (2, True), (4, False), (8, False)):
        assert triton_backend._fused(Config(64, 64, splits, 8, 2, gluon=True), 32, 128) == want, splits
    cfg = Config(64, 64, 2, 8, 2, gluon=True)
    assert triton_backend._fused(cfg, 64, 64) and not triton_backend._fused(cfg, 64, 32)
    assert not triton_backend._fused(Config(16, 64, 2, 8, 2, gluon=True), 32, 128)
    assert not triton_backend._fused(Config(64, 64, 2, 8, 2), 32, 128)  # the Triton kernel has no FUSED
    assert triton_backend._fused(cfg, SYNC_FLOATS // 4 // 2, 128)
    assert not triton_backend._fused(cfg, SYNC_FLOATS // 4 // 2 + 1, 128)
    monkeypatch.setattr(triton_backend, "_FUSED", False)  # SPARSEMLA_FUSED_COMBINE=0
    assert not triton_backend._fused(cfg, 32, 128)


def test_the_workspace_keeps_the_fused_combines_counters_zeroed_before_it(monkeypatch):
    # The scratch that split-K partials go to starts SYNC_FLOATS floats into the buffer; those floats are the
    # FUSED kernels' counters (found before o_part), zeroed when the buffer is allocated or grown.
    from sparsemla.gen.gluon import SYNC_FLOATS
    monkeypatch.setattr(triton_backend, "_workspaces", {})
    dev = torch.device("cpu")
    ws = triton_backend.workspace(dev, 100)
    buf = triton_backend._workspaces[dev, 0]
    assert ws.numel() == 100 and ws.data_ptr() == buf.data_ptr() + 4 * SYNC_FLOATS
    assert bool((buf[:SYNC_FLOATS] == 0).all())
    ws.fill_(7.0)
    assert triton_backend.workspace(dev, 50).data_ptr() == ws.data_ptr()  # reused, not grown
    grown = triton_backend.workspace(dev, 1000)
    assert triton_backend._workspaces[dev, 0] is not buf and grown.numel() == 1000
    assert bool((triton_backend._workspaces[dev, 0][:SYNC_FLOATS] == 0).all())
    other = triton_backend.workspace(dev, 1000, stream=7)  # another stream's: a buffer of its own
    assert other.data_ptr() != grown.data_ptr() and triton_backend._workspaces[dev, 7] is not buf


def test_a_replaced_workspace_stays_allocated_for_the_graphs_that_captured_it(monkeypatch):
    # A CUDA graph replays the pointers it captured: freeing a replaced workspace would let other tensors take
    # the memory its replays still write. Replaced buffers stay until release_retired_workspaces; growth at
    # least doubles, so they hold at most as much as the current one.
    from sparsemla.gen.gluon import SYNC_FLOATS
    monkeypatch.setattr(triton_backend, "_workspaces", {})
    monkeypatch.setattr(triton_backend, "_retired", {})
    dev = torch.device("cpu")
    first = triton_backend.workspace(dev, 100)
    bufs = [triton_backend._workspaces[dev, 0]]
    for n in (150, 180, 5000, 5001):
        assert triton_backend.workspace(dev, n).numel() == n
        if triton_backend._workspaces[dev, 0] is not bufs[-1]:
            bufs.append(triton_backend._workspaces[dev, 0])
    assert [b.numel() - SYNC_FLOATS for b in bufs] == [100, 200, 5000, 10000]  # 180 fits in 200
    retired = triton_backend._retired[dev]
    assert [b.data_ptr() for b in retired] == [b.data_ptr() for b in bufs[:-1]]
    assert sum(b.numel() - SYNC_FLOATS for b in retired) <= bufs[-1].numel() - SYNC_FLOATS
    assert first.data_ptr() == retired[0].data_ptr() + 4 * SYNC_FLOATS
    assert triton_backend.release_retired_workspaces() == sum(b.numel() * 4 for b in retired)
    assert triton_backend._retired == {} and triton_backend.release_retired_workspaces() == 0


def _split_k_call(gen, T=3, H=16, topk=48, slots=80):
    """A split-K Triton call (interpreter) and its float64 reference: (call, want); call() returns the output."""
    from helpers import random_indices, reference64
    cache = torch.randn(slots, 576, generator=gen).half()
    q = torch.randn(T, H, 576, generator=gen).half()
    idx = random_indices(T, topk, slots, gen)
    want, _ = reference64(q, cache.double(), idx, 0.04, 512)

    def call():
        return sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, backend="triton", config=Config(16, 16, 3, 4, 1))
    return call, want


def test_a_workspace_part_replaced_in_a_prepared_direct_launch():
    # _Kernel.set_fixed: the direct launcher's argument list follows a re-pointed workspace part where its
    # 16-byte alignment (which the kernel was compiled for) is kept; otherwise the next call rebuilds it.
    k = object.__new__(triton_backend._Kernel)
    k.args = triton_backend._Args()
    k.args.fixed(torch.zeros(8), 5)
    k.direct = types.SimpleNamespace(values=[k.args.values[0], 5, "constexpr"])
    new = torch.zeros(8)
    k.set_fixed(0, new)
    assert k.args.values[0] is new and k.direct.values[0] is new
    odd = torch.zeros(9)[1:]  # 4 bytes past a 16-byte boundary
    k.set_fixed(0, odd)
    assert k.args.values[0] is odd and k.direct is None


def _prepared_split_k(monkeypatch, seed):
    """A split-K call made once (fresh workspaces and call cache): (call, its float64 reference, its TritonLaunch)."""
    monkeypatch.setattr(triton_backend, "_workspaces", {})
    api.clear_call_cache()
    call, want = _split_k_call(torch.Generator().manual_seed(seed))
    call()
    (prepared,) = api._calls.values()
    return call, want, prepared.launch


def test_calls_on_two_streams_never_share_a_workspace(monkeypatch):
    # Launches on two streams of one device may run at once: each stream's calls write their split-K partials
    # into a workspace of its own. One prepared launch, called on alternating streams, re-points its kernels'
    # arguments (the direct launcher's too) at the current stream's buffer.
    call, want, launch = _prepared_split_k(monkeypatch, 11)
    stream = {"now": 5}
    launch.stream_fn = lambda index: stream["now"]
    bound = {}
    for now in (5, 9, 5, 9):
        stream["now"] = now
        got = call()
        assert rel_err(got, want) < 2e-3
        assert launch.ws_buf is triton_backend._workspaces[torch.device("cpu"), now]
        assert launch.fwd.args.values[launch.ws_pos].data_ptr() == launch.parts[0].data_ptr()
        assert launch.combine.args.values[0] is launch.parts[0]
        bound.setdefault(now, launch.ws_buf.data_ptr())
        assert launch.ws_buf.data_ptr() == bound[now]  # each stream keeps its own buffer
    assert bound[5] != bound[9]


def test_threads_on_two_streams_launch_with_their_own_streams_workspace(monkeypatch):
    # Threads keep their own current streams. A thread binding its stream's workspace while another is between
    # its binding and its launch would hand that launch the wrong buffer: TritonLaunch.lock holds the binding
    # through the launch. Thread A pauses in its launch until B has bound its stream (or 0.5 s pass).
    from sparsemla.gen.gluon import SYNC_FLOATS
    call, want, launch = _prepared_split_k(monkeypatch, 13)
    streams = {"A": 1, "B": 2}
    launch.stream_fn = lambda index: streams[threading.current_thread().name]
    a_in, b_bound, seen, results = threading.Event(), threading.Event(), {}, {}
    bind, run = launch._bind_workspace, launch._launch

    def binding(stream):
        bind(stream)
        if stream == 2:
            b_bound.set()

    def launching(*args):
        name = threading.current_thread().name
        if name == "A":
            a_in.set()
            b_bound.wait(0.5)
        seen[name] = launch.parts[0].data_ptr()
        run(*args)

    monkeypatch.setattr(launch, "_bind_workspace", binding)
    monkeypatch.setattr(launch, "_launch", launching)
    threads = {name: threading.Thread(target=lambda n=name: results.__setitem__(n, call()), name=name)
               for name in streams}
    threads["A"].start()
    assert a_in.wait(60)
    threads["B"].start()
    for t in threads.values():
        t.join(120)
    for name, stream in streams.items():
        assert seen[name] == triton_backend._workspaces[torch.device("cpu"), stream].data_ptr() + 4 * SYNC_FLOATS
        assert rel_err(results[name], want) < 2e-3


def test_a_graph_captured_on_a_stream_without_a_workspace_gets_buffers_of_its_own(monkeypatch):
    # While a CUDA graph is being captured on a stream with no workspace large enough, each call's partials go to
    # a buffer of its own (the graph's pool): a shared one allocated in the capture would be zeroed only when that
    # graph replays. FUSED launches zero the counters in it (torch.empty is poisoned here to show it).
    from sparsemla.gen.gluon import SYNC_FLOATS
    call, want, launch = _prepared_split_k(monkeypatch, 12)
    launch.stream_fn = lambda index: 3  # a stream no call ran on
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: empty(*a, **k).fill_(float("nan"))
                        if k.get("dtype") == torch.float32 else empty(*a, **k))
    monkeypatch.setattr(triton_backend, "capturing", lambda device: True)
    monkeypatch.setattr(launch, "fused", True)
    run, bufs = launch._launch, []

    def launching(*args):  # the buffer the launch writes: its counters zeroed; held by a weak reference only
        assert bool((launch.ws_buf[:SYNC_FLOATS] == 0).all())
        bufs.append(weakref.ref(launch.ws_buf))
        run(*args)

    monkeypatch.setattr(launch, "_launch", launching)
    for _ in range(2):
        assert rel_err(call(), want) < 2e-3
        # Nothing keeps it past the call: torch.compile's CUDA-graph trees refuse a tensor in their pool that
        # outlives the call without being one of its outputs (H200, session 28).
        gc.collect()
        assert bufs[-1]() is None and launch.ws_buf is None and launch.parts is None
    assert (torch.device("cpu"), 3) not in triton_backend._workspaces
    monkeypatch.setattr(triton_backend, "capturing", lambda device: False)
    assert rel_err(call(), want) < 2e-3  # eager again: the stream's own workspace
    assert launch.ws_buf is triton_backend._workspaces[torch.device("cpu"), 3]


@pytest.mark.parametrize("heads,splits,fused", [(128, 2, True), (64, 2, True), (128, 4, False), (32, 2, False)])
def test_a_fused_launch_has_no_combine_kernel(monkeypatch, heads, splits, fused):
    # The launch a Gluon config prepares (not run: the Gluon kernel needs the GPU): with FUSED (the split
    # count) the attention kernel is the only kernel; without it the combine kernel follows.
    from sparsemla.runtime.kvcache import describe_cache
    monkeypatch.setattr(triton_backend, "interpreting", lambda: False)
    spec = KernelSpec(num_heads=heads, topk=128, arch="sm90")
    T = 3
    q = torch.zeros(T, heads, 576, dtype=torch.bfloat16)
    view = describe_cache(torch.zeros(256, 576, dtype=torch.bfloat16), "auto", 576, 512)
    idx = torch.zeros(T, 128, dtype=torch.int32)
    out = torch.empty(T, heads, 512, dtype=torch.bfloat16)
    launch = triton_backend.TritonLaunch(spec, Config(64, 64, splits, 8, 2, gluon=True), q, view, idx, out, None)
    assert launch.fwd.constexprs["FUSED"] == (splits if fused else 0)
    assert launch.fwd.kw["enable_fp_fusion"] is True  # (gen.render.COMPILE_OPTIONS, at every launch)
    assert (launch.combine is None) == fused


def test_a_call_runs_on_its_tensors_cuda_device(monkeypatch):
    # Triton launches on the current device: a call whose tensors are on another GPU of the process runs inside
    # torch.cuda.device of its first tensor's device (mocked here: this machine has no GPU).
    import contextlib
    from unittest import mock
    from sparsemla.runtime import paging
    from sparsemla.runtime.device_guard import on_tensor_device
    entered = []

    @contextlib.contextmanager
    def device(d):
        entered.append(d)
        yield

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device", device)
    seen = []
    f = on_tensor_device(lambda x, **kw: seen.append((len(entered), kw)) or "done")

    def cuda_tensor(index):
        t = mock.MagicMock(spec=torch.Tensor)
        t.is_cuda, t.device = True, torch.device("cuda", index)
        t.get_device.return_value = index
        return t

    assert f(cuda_tensor(1), k=2) == "done" and entered == [torch.device("cuda", 1)] and seen == [(1, dict(k=2))]
    f(cuda_tensor(0))
    f(torch.zeros(1))
    assert len(entered) == 1  # the current device, and CPU tensors: no context
    for fn in (sparsemla.sparse_mla, sparsemla.convert_indices, sparsemla.pack_valid_prefix, sparsemla.page_split,
               paging.page_split):
        assert getattr(fn, "__wrapped__", None) is not None, fn


def test_the_launch_constexprs_the_tools_compile_are_the_runtimes(monkeypatch):
    # runtime/triton_backend.launch_constexprs (benchmarks/compile_report.py, ptx_same.py) against the rules
    # TritonLaunch applies (_fused, then _pdl where the partials go to a combine kernel), on a mocked H200, for
    # every Gluon entry of the H200 table.
    from sparsemla.gen.tuned_table import load_table, package_dir
    props = types.SimpleNamespace(major=9, multi_processor_count=132)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(triton_backend, "interpreting", lambda: False)
    cuda, seen = torch.device("cuda", 0), {"pdl": 0, "fused": 0}
    for key, buckets in load_table(package_dir() / "NVIDIA_H200" / "sparse_mla.json", check_provenance=False).items():
        spec = KernelSpec.from_key(key)
        for T, entry in buckets.items():
            cfg = entry.config
            if not cfg.gluon:
                continue
            S, H = cfg.num_splits, spec.num_heads
            grid = T * -(-H // cfg.block_h) * S
            fused = S > 1 and triton_backend._fused(cfg, T, H)
            cgrid = T * H * (spec.d_v // triton_backend.combine_columns(S, spec.d_v))
            pdl = S > 1 and not fused and triton_backend._pdl(cfg, grid, cgrid, cuda)
            got = triton_backend.launch_constexprs(spec, cfg, T, 132)
            assert got == dict(pdl=pdl, fused=S if fused else 0), (key, T)
            seen["pdl"] += pdl
            seen["fused"] += bool(fused)
    assert seen["pdl"] and seen["fused"]  # both occur in the table


def test_the_extra_lists_splits_in_one_gluon_launch():
    # gen.gluon.extra_splits: the extra list in chunks of the main list's (its top-k over the config's splits, in
    # whole 64-key tiles), at least one; the launch has the config's splits plus these.
    from sparsemla.gen.gluon import extra_splits
    spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64, arch="sm90", extra_topk=128, extra_page_size=64)
    for splits, want in ((1, 1), (4, 1), (16, 1), (32, 2), (64, 2)):  # chunks 2048, 512, 128, 64, 64 keys
        assert extra_splits(spec, Config(16, 64, splits, 8, 1, gluon=True)) == want, splits
    assert extra_splits(replace(spec, extra_topk=640), Config(64, 64, 8, 8, 2, gluon=True)) == 3  # 256-key chunks
    assert extra_splits(replace(spec, extra_topk=0, extra_page_size=1), Config(64, 64, 8, 8, 2, gluon=True)) == 0


def test_the_gluon_kernel_takes_an_extra_cache_of_the_main_ones_page_size_and_strides():
    from sparsemla.gen.gluon import GluonKernel, unsupported
    spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64, arch="sm90", extra_topk=128, extra_page_size=64)
    assert unsupported(spec) == "" and GluonKernel(spec, 16).key.startswith(spec.key + "-gluon")
    assert "page size (256) must be the main one's (64)" in unsupported(replace(spec, extra_page_size=256))
    with pytest.raises(ValueError, match="no extra cache"):
        GluonKernel(replace(spec, kv_format="auto", d_qk=576, page_size=1, extra_page_size=1), 64, persistent=True)
    with pytest.raises(ValueError, match="gluon.*extra cache's page size"):
        Config(16, 64, 2, 8, 1, gluon=True).check(replace(spec, extra_page_size=256))
    view = describe_cache(torch.zeros(4, 64, 576, dtype=torch.bfloat16), "auto", 576, 512, q_dtype=torch.bfloat16)
    wide = describe_cache(torch.zeros(4, 64, 640, dtype=torch.bfloat16)[..., :576], "auto", 576, 512,
                          q_dtype=torch.bfloat16)
    idx, xidx = torch.zeros(2, 64, dtype=torch.int32), torch.zeros(2, 16, dtype=torch.int32)
    assert triton_backend.gluon_extra_problem(view, view, idx, xidx) == ""
    assert "row strides" in triton_backend.gluon_extra_problem(view, wide, idx, xidx)
    assert "column stride 2" in triton_backend.gluon_extra_problem(view, view, idx, xidx.repeat(1, 2)[:, ::2])


def test_an_extra_cache_call_takes_the_main_lists_gluon_entry_at_small_t(monkeypatch):
    # triton_backend.extra_gluon (on unless SPARSEMLA_EXTRA_GLUON=0, at T <= 4): the main list's tuned Gluon entry,
    # for the call with the extra cache; without it, or where the main entry is not a Gluon one, the config the
    # table gives the call (here with run_triton replaced, so not PartsLaunch).
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(2, 16, 576, generator=gen).bfloat16()
    kv, xkv = torch.randn(64, 576, generator=gen).bfloat16(), torch.randn(32, 576, generator=gen).bfloat16()
    idx, xidx = torch.randint(0, 64, (2, 128), dtype=torch.int32), torch.randint(0, 32, (2, 64), dtype=torch.int32)
    gluon_cfg, plain = Config(16, 64, 2, 8, 1, gluon=True), Config(16, 16, 1, 4, 1)
    monkeypatch.setattr(dispatch, "select_config", lambda spec, T, dev: plain if spec.extra_topk else main_cfg)
    seen = []
    monkeypatch.setattr(triton_backend, "run_triton", lambda spec, cfg, *a, **k: seen.append((spec, cfg)))

    def chosen():
        api.clear_call_cache()
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.04, extra_kv_cache=xkv, extra_indices=xidx, backend="triton",
                             compute_dtype="bf16")
        return seen[-1][1]
    main_cfg = gluon_cfg
    monkeypatch.setattr(triton_backend, "_EXTRA_GLUON", False)  # SPARSEMLA_EXTRA_GLUON=0
    assert chosen() == plain
    monkeypatch.setattr(triton_backend, "_EXTRA_GLUON", True)
    assert chosen() == gluon_cfg and seen[-1][0].extra_topk == 64
    main_cfg = Config(64, 64, 1, 8, 2)  # the main list's entry is a Triton one
    assert chosen() == plain


def test_kept_buffers_are_allocated_on_a_thread_of_their_own(monkeypatch):
    # torch.compile's CUDA-graph trees route every allocation of the thread that warms up or records a graph into
    # their pool and refuse a tensor there that outlives the call (H200, session 28): the runtime's kept buffers
    # (split-K workspaces, page_split state, FlashInfer buffers) are made on another thread. CUDA is faked here.
    from sparsemla.runtime import launch
    made_on, empty = [], torch.empty

    def fake_empty(*shape, dtype=None, device=None):
        made_on.append(threading.current_thread())
        return empty(*shape, dtype=dtype)

    class FakeStream:
        def synchronize(self):
            made_on.append("synchronized")

    monkeypatch.setattr(torch, "empty", fake_empty)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: FakeStream())
    buf = launch.kept_buffer(8, torch.int32, torch.device("cuda", 0), zero=True)
    assert made_on[0] is not threading.current_thread() and made_on[1] == "synchronized"
    assert buf.dtype == torch.int32 and bool((buf == 0).all())
    monkeypatch.setattr(torch, "empty", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("out of memory")))
    with pytest.raises(RuntimeError, match="out of memory"):  # the worker's error, raised in the caller
        launch.kept_buffer(8, torch.int32, torch.device("cuda", 0))
    # and the runtime's buffers come from it
    kept = []
    monkeypatch.setattr(triton_backend, "kept_buffer", lambda *a, **k: kept.append(a) or empty(a[0], dtype=a[1]))
    monkeypatch.setattr(triton_backend, "_workspaces", {})
    triton_backend.workspace(torch.device("cpu"), 100)
    assert kept and kept[0][1] == torch.float32
