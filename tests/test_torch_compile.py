"""sparse_mla under torch.compile: one custom operator node, no graph break, the eager call's results."""
import os
import shutil

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.compat import flash_mla_sparse_fwd, flash_mla_with_kvcache  # noqa: E402

from helpers import make_cache, poison_unreferenced, random_indices, reference64, rel_err, two_caches  # noqa: E402

OP = torch.ops.sparsemla.sparse_mla


class Recorder:
    """A torch.compile backend that keeps the FX graphs Dynamo hands it and runs them as they are."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def operator_nodes(self):
        """How many nodes call the operator (Dynamo's graphs name its packet, AOT's its overload)."""
        return sum(n.target in (OP, OP.default) for g in self.graphs for n in g.graph.nodes)


def _problem(gen, kv_format="auto", d_qk=576, page=None, T=3, H=16, topk=48, slots=256):
    cache, kw, deq = make_cache(kv_format, d_qk, slots, page, torch.float32, gen)
    idx = random_indices(T, topk, slots, gen)
    idx[1] = -1  # a row with nothing valid
    cache = poison_unreferenced(cache, kv_format, page or 1, idx.flatten())
    q = torch.randn(T, H, d_qk, generator=gen)
    return q, cache, idx, kw, deq


def test_a_fullgraph_compile_holds_one_operator_and_matches_the_eager_call():
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, _ = _problem(gen)
    tlen = torch.randint(0, 49, (3,), generator=gen, dtype=torch.int32)
    sink = torch.randn(16, generator=gen)

    def f(q, cache, idx, tlen, sink):
        out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.07, topk_length=tlen, attn_sink=sink,
                                        return_lse=True, **kw)
        return out * 2, lse + 1

    rec = Recorder()
    got = torch.compile(f, fullgraph=True, backend=rec)(q, cache, idx, tlen, sink)
    want = f(q, cache, idx, tlen, sink)
    assert rec.operator_nodes() == 1
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
    assert torch.isinf(got[1][1]).all() and (got[0][1] == 0).all()


@pytest.mark.parametrize("with_out", [False, True])
def test_aot_autograd_functionalizes_the_operator(with_out):
    # aot_eager traces the operator with its fake implementation and functionalizes the write into out.
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, deq = _problem(gen, "fp8_e4m3", 576, 16)

    def f(q, cache, idx, out):
        return sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, kv_format="fp8_e4m3", out=out, **kw)

    out = torch.full((3, 16, 512), float("nan")) if with_out else None
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(q, cache, idx, out)
    if with_out:
        assert got is out or got.data_ptr() == out.data_ptr()
    ref, _ = reference64(q, deq, idx, 0.05, 512)
    assert rel_err(got, ref) < 1e-5


def test_the_compiled_operator_runs_the_triton_kernel_in_the_interpreter():
    gen = torch.Generator().manual_seed(torch.seed())
    cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(
        "model1", 512, 64, 64, torch.float32, gen, topk=64, xtopk=32, slots=256, x_slots=128,
        xlen=torch.tensor([32, 5, 0], dtype=torch.int32))
    q = torch.randn(3, 16, 512, generator=gen)
    xlen = torch.tensor([32, 5, 0], dtype=torch.int32)

    def f(q, cache, idx, xcache, xidx, xlen):
        return sparsemla.sparse_mla(q, cache, idx, sm_scale=0.06, kv_format="model1", extra_kv_cache=xcache,
                                    extra_indices=xidx, extra_topk_length=xlen, return_lse=True, backend="triton",
                                    **kw)

    rec = Recorder()
    out, lse = torch.compile(f, fullgraph=True, backend=rec)(q, cache, idx, xcache, xidx, xlen)
    assert rec.operator_nodes() == 1
    ref, ref_lse = reference64(q, deq, idx, 0.06, 512, x_deq=xdeq, x_indices=xidx, x_topk_length=xlen)
    assert rel_err(out, ref) < 1e-4 and rel_err(lse, ref_lse) < 1e-5


def test_flashmla_compat_compiles_without_a_graph_break():
    gen = torch.Generator().manual_seed(torch.seed())
    b, s_q, h, topk, page, blocks = 2, 2, 16, 40, 64, 4
    kv = torch.randn(blocks * page, 576, generator=gen)
    cache = sparsemla.quantize_kv(kv, "fp8_ds_mla", page_size=page).unsqueeze(2)
    deq = sparsemla.dequantize_kv(cache.squeeze(2), "fp8_ds_mla").double()
    idx = random_indices(b * s_q, topk, blocks * page, gen).view(b, s_q, topk)
    q = torch.randn(b, s_q, h, 576, generator=gen)

    def f(q, cache, idx):
        return flash_mla_with_kvcache(q, cache, None, None, 512, softmax_scale=0.05, is_fp8_kvcache=True,
                                      indices=idx)

    rec = Recorder()
    out, lse = torch.compile(f, fullgraph=True, backend=rec)(q, cache, idx)
    assert rec.operator_nodes() == 1 and out.shape == (b, s_q, h, 512) and lse.shape == (b, h, s_q)
    ref, ref_lse = reference64(q.view(-1, h, 576), deq, idx.view(-1, topk), 0.05, 512)
    assert rel_err(out.view(-1, h, 512), ref) < 1e-5
    assert rel_err(lse.transpose(1, 2).reshape(-1, h), ref_lse) < 1e-6

    def g(q, cache, idx, out):  # vLLM's DeepSeek-V4 calls pass out=
        return flash_mla_with_kvcache(q, cache, None, None, 512, softmax_scale=0.05, is_fp8_kvcache=True,
                                      indices=idx, out=out)

    rec = Recorder()
    buf = torch.full((b, s_q, h, 512), float("nan"))
    res, _ = torch.compile(g, fullgraph=True, backend=rec)(q, cache, idx, buf)
    assert rec.operator_nodes() == 1 and rel_err(buf.view(-1, h, 512), ref) < 1e-5 and torch.equal(res, buf)


def test_flashmla_sparse_prefill_compiles_to_one_operator_with_max_logits():
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, _ = _problem(gen)
    f = lambda q, kv, idx: flash_mla_sparse_fwd(q, kv, idx, 0.05)  # noqa: E731
    rec = Recorder()
    out, max_logits, lse = torch.compile(f, fullgraph=True, backend=rec)(q, cache, idx)
    assert rec.operator_nodes() == 1
    want = f(q, cache, idx)
    assert torch.equal(out, want[0]) and torch.equal(max_logits, want[1]) and torch.equal(lse, want[2])
    assert max_logits.shape == lse.shape == (q.shape[0], q.shape[1]) and torch.isfinite(max_logits).any()


def test_dynamic_token_counts_share_one_graph():
    gen = torch.Generator().manual_seed(torch.seed())
    _, cache, ids, kw, deq = _problem(gen, T=5)
    ids = ids.flatten()  # the slots left un-poisoned, and -1
    rec = Recorder()
    f = torch.compile(lambda q, idx: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, **kw), dynamic=True,
                      fullgraph=True, backend=rec)
    for T in (5, 3, 4):
        q, idx = torch.randn(T, 16, 576, generator=gen), ids[torch.randint(0, len(ids), (T, 48), generator=gen)]
        ref, _ = reference64(q, deq, idx, 0.05, 512)
        assert rel_err(f(q, idx), ref) < 1e-5
    assert len(rec.graphs) == 1


def test_operator_schema_and_fake_implementation():
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, _ = _problem(gen)
    sink = torch.randn(16, generator=gen)
    for return_lse, max_logits in ((False, False), (True, False), (False, True)):
        out = torch.empty(3, 16, 512)
        args = (q, cache, idx, out, 0.05, "auto", 512, return_lse, "auto", None, sink, None, None, None, None,
                None, None, None, None, None, None, max_logits)
        torch.library.opcheck(OP.default, args)


def test_a_tensor_scale_is_refused_while_tracing():
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, _ = _problem(gen, "fp8_e4m3", 576, 16)
    scale = torch.tensor(kw["kv_scale"])
    f = torch.compile(lambda q: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, kv_format="fp8_e4m3",
                                                     kv_scale=scale), fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="kv_scale: a tensor under torch.compile"):
        f(q)


@pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None,
                    reason="Inductor's CPU code needs a C++ compiler")
def test_inductor_compiles_around_the_operator():
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, deq = _problem(gen)

    def f(q, idx):
        out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, return_lse=True, **kw)
        return out * 2 + 1, lse.exp()

    got = torch.compile(f, fullgraph=True)(q, idx)
    want = f(q, idx)
    torch.testing.assert_close(got[0], want[0], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got[1], want[1], rtol=1e-6, atol=1e-6)


def test_a_call_of_the_operator_runs_no_python_layer_of_torch_library(monkeypatch):
    # torch.library.custom_op wraps a mutating operator's every call in Python layers (torch/_library/)
    # that cost ~120 us with this schema, paid per run of a compiled graph; the operator must not have them.
    import sys

    from sparsemla.runtime import api, ops
    calls = []
    monkeypatch.setattr(api, "sparse_mla", lambda q, *a, out, **k: (out, torch.zeros(q.shape[:2])))
    q, out = torch.randn(2, 16, 576), torch.empty(2, 16, 512)
    args = (q, torch.randn(8, 576), torch.zeros(2, 4, dtype=torch.int32), out, 0.1, "auto", 512, True, "auto",
            None, None, None, None, None, None, None, None, None, None, None, None)
    version = out._version
    sys.setprofile(lambda frame, event, arg: calls.append(frame.f_code.co_filename) if event == "call" else None)
    try:
        lse = OP.default(*args)
    finally:
        sys.setprofile(None)
    assert lse.shape == (2, 16) and out._version > version  # ran, and told autograd that out changed
    assert ops.__file__ in calls
    assert not [f for f in calls if "_library" in f.replace("\\", "/").split("torch/")[-1]], calls


def test_the_compiled_operator_runs_under_inference_mode():
    # Serving engines run under torch.inference_mode, whose tensors have no version counter to bump.
    gen = torch.Generator().manual_seed(torch.seed())
    q, cache, idx, kw, _ = _problem(gen)
    with torch.inference_mode():
        f = torch.compile(lambda q, idx: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, return_lse=True, **kw),
                          fullgraph=True, backend="aot_eager")
        got, want = f(q, idx), sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, return_lse=True, **kw)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
