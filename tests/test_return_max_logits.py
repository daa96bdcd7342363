"""``sparse_mla(..., return_max_logits=True)``: the attention kernel also writes each head's largest scaled score
(KernelSpec.max_logits; FlashMLA prefill's max_logits). The Triton kernel in the interpreter against an fp64 max on
the dequantized rows, for every KV format, with split-K (the splits meet by atomic max), topk_length, empty rows,
sinks, NaN-poisoned unreferenced slots and non-contiguous q; out and LSE unchanged by it; a repeated (prepared) call
starts from -inf again; the PyTorch backend; the errors."""
import math
import os

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.gen.spec import Config, KernelSpec  # noqa: E402
from sparsemla.runtime.api import clear_call_cache  # noqa: E402

from helpers import FORMAT_CASES, make_cache, poison_unreferenced, random_indices  # noqa: E402


def _fp64_max(q, deq, idx, tlen, scale):
    T, H, _ = q.shape
    out = torch.full((T, H), -math.inf, dtype=torch.float64)
    for t in range(T):
        n = idx.shape[1] if tlen is None else max(0, min(int(tlen[t]), idx.shape[1]))
        sel = [int(s) for s in idx[t, :n] if 0 <= int(s) < deq.shape[0]]
        if sel:
            out[t] = (q[t].double()[:, :deq.shape[1]] @ deq[sel].T * scale).amax(1)
    return out


@pytest.mark.parametrize("case,splits", [("auto576", 1), ("auto576", 3), ("auto_nope512", 2), ("fp8_576", 2),
                                         ("ds_mla", 1), ("model1_p64", 3)])
def test_against_fp64(case, splits):
    gen = torch.Generator().manual_seed(torch.seed())
    kv_format, d_qk, page = FORMAT_CASES[case]
    T, H, slots, topk = 5, 20, 192, 48
    cache, kw, deq = make_cache(kv_format, d_qk, slots, page, torch.float32, gen)
    idx = random_indices(T, topk, slots, gen)
    idx[1] = -1  # nothing valid
    tlen = torch.tensor([topk, topk, 7, 0, 100], dtype=torch.int32)
    poison_unreferenced(cache, kv_format, page, torch.cat([idx[t, :max(0, min(int(tlen[t]), topk))]
                                                           for t in range(T)]))
    q = torch.randn(T, H, 2 * d_qk, generator=gen)[:, :, ::2]  # non-contiguous rows
    sink = torch.randn(H, generator=gen)
    call = dict(sm_scale=0.09, kv_format=kv_format, d_v=512, topk_length=tlen, attn_sink=sink, **kw)
    cfg = Config(block_h=16, block_n=16, num_splits=splits, num_warps=4, num_stages=1)
    out, lse, ml = sparsemla.sparse_mla(q, cache, idx, return_lse=True, return_max_logits=True, backend="triton",
                                        config=cfg, **call)
    want = _fp64_max(q, deq, idx, tlen, 0.09)
    assert ml.dtype == torch.float32 and ml.shape == (T, H)
    assert torch.equal(torch.isinf(ml), torch.isinf(want)) and (ml[want == -math.inf] == -math.inf).all()
    fin = torch.isfinite(want)
    assert fin[0].all() and not ml.isnan().any()
    assert (ml[fin].double() - want[fin]).abs().max() < 2e-5 * max(1.0, want[fin].abs().max())
    # The kernel with and without it: the same out and LSE.
    out0, lse0 = sparsemla.sparse_mla(q, cache, idx, return_lse=True, backend="triton", config=cfg, **call)
    assert torch.equal(out, out0) and torch.equal(lse, lse0)
    # The PyTorch backend agrees.
    _, _, ml_torch = sparsemla.sparse_mla(q, cache, idx, return_lse=True, return_max_logits=True, backend="torch",
                                          **call)
    assert torch.equal(torch.isinf(ml_torch), torch.isinf(want))
    assert (ml_torch[fin].double() - want[fin]).abs().max() < 2e-5 * max(1.0, want[fin].abs().max())


def test_results_and_a_repeated_call():
    # (out, max_logits) without return_lse; a second call of the same signature (the prepared launch) starts its
    # maxima from -inf again: smaller scores the second time must show.
    gen = torch.Generator().manual_seed(torch.seed())
    clear_call_cache()
    q = torch.randn(3, 16, 576, generator=gen)
    kv = torch.randn(64, 576, generator=gen)
    idx = random_indices(3, 32, 64, gen)
    cfg = Config(block_h=16, block_n=16, num_splits=2, num_warps=4, num_stages=1)
    first = sparsemla.sparse_mla(q, kv, idx, sm_scale=0.05, return_max_logits=True, backend="triton", config=cfg)
    assert isinstance(first, tuple) and len(first) == 2 and first[1].shape == (3, 16)
    second = sparsemla.sparse_mla(q * 0.5, kv, idx, sm_scale=0.05, return_max_logits=True, backend="triton",
                                  config=cfg)
    want = _fp64_max(q * 0.5, kv.double(), idx, None, 0.05)
    assert (second[1].double() - want).abs().max() < 2e-5 * max(1.0, want.abs().max())
    # No slot at all: -inf (and LSE +inf, output 0).
    out, lse, ml = sparsemla.sparse_mla(q, kv, idx[:, :0], sm_scale=0.05, return_lse=True, return_max_logits=True,
                                        backend="triton")
    assert (ml == -math.inf).all() and (lse == math.inf).all() and (out == 0).all()


def test_errors():
    q = torch.randn(2, 4, 576)
    kv = torch.randn(8, 576)
    idx = torch.zeros(2, 4, dtype=torch.int32)
    with pytest.raises(ValueError, match="return_max_logits='yes': expected True or False"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1, return_max_logits="yes")
    with pytest.raises(ValueError, match="return_max_logits=True with extra_kv_cache"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1, return_max_logits=True, extra_kv_cache=kv, extra_indices=idx)
    with pytest.raises(ValueError, match="KernelSpec.max_logits=True: expected False unless return_lse=True"):
        KernelSpec(max_logits=True)
    spec = KernelSpec(return_lse=True, max_logits=True)
    assert spec.key.endswith("-lse-ml") and KernelSpec.from_key(spec.key) == spec
    from sparsemla.runtime.flashinfer_backend import unsupported_reason
    assert "max" in unsupported_reason(spec)
