"""Bad input gets a ValueError/TypeError that names the argument and says what was expected."""
import numpy as np
import pytest
import torch

import sparsemla
from sparsemla.gen.layout import model1_page_bytes


def _problem(T=2, H=4, d=576, slots=64):
    q = torch.randn(T, H, d, dtype=torch.float16)
    cache = torch.randn(slots, d, dtype=torch.float16)
    idx = torch.randint(0, slots, (T, 8), dtype=torch.int32)
    return q, cache, idx


@pytest.mark.parametrize("mutate,exc,words", [
    (lambda q, c, i: (q.double(), c, i), TypeError, ["q", "dtype"]),
    (lambda q, c, i: (q[0], c, i), ValueError, ["q", "shape"]),
    (lambda q, c, i: (q, c.float(), i), ValueError, ["kv_cache", "dtype"]),
    (lambda q, c, i: (q, c[:, :512], i), ValueError, ["kv_cache", "576"]),
    (lambda q, c, i: (q, c, i.long()), TypeError, ["indices", "int32"]),
    (lambda q, c, i: (q, c, i[:1]), ValueError, ["indices", "shape"]),
    (lambda q, c, i: (q, c, torch.full_like(i, 64)), ValueError, ["indices", "[0, 64)"]),
    (lambda q, c, i: (q, c, torch.full_like(i, -2)), ValueError, ["indices", "-1"]),
    (lambda q, c, i: (q, c.to("meta"), i), ValueError, ["kv_cache", "device"]),
])
def test_bad_arguments_are_named(mutate, exc, words):
    q, c, i = mutate(*_problem())
    with pytest.raises(exc) as e:
        sparsemla.sparse_mla(q, c, i, sm_scale=0.1, backend="torch")
    for w in words:
        assert w in str(e.value), str(e.value)


def test_bad_keywords_are_named():
    q, c, i = _problem()
    cases = [
        (dict(sm_scale=-1.0), "sm_scale"),
        (dict(sm_scale=0.1, backend="cuda"), "backend"),
        (dict(sm_scale=0.1, kv_format="fp9"), "kv_format"),
        (dict(sm_scale=0.1, kv_scale=2.0), "kv_scale"),
        (dict(sm_scale=0.1, topk_length=torch.zeros(2, dtype=torch.int64)), "topk_length"),
        (dict(sm_scale=0.1, attn_sink=torch.zeros(3)), "attn_sink"),
        (dict(sm_scale=0.1, out=torch.empty(2, 4, 256, dtype=torch.float16)), "out"),
        (dict(sm_scale=0.1, extra_kv_cache=c), "extra_indices"),
    ]
    for kw, word in cases:
        with pytest.raises((ValueError, TypeError)) as e:
            sparsemla.sparse_mla(q, c, i, **kw)
        assert word in str(e.value), (kw, str(e.value))


@pytest.mark.parametrize("bad", [0.0, -0.5, float("nan"), float("inf"), True, "2", torch.tensor([0.5, 0.25])])
def test_scales_must_be_positive_finite_numbers(bad):
    """A zero, negative or non-finite scale would give a silently wrong answer (all-zero keys, NaN)."""
    q, c, i = _problem()
    with pytest.raises((ValueError, TypeError)) as e:
        sparsemla.sparse_mla(q, c, i, sm_scale=bad, backend="torch")
    assert f"sm_scale={bad!r}" in str(e.value), str(e.value)
    fp8, scale = sparsemla.quantize_kv(c.float(), "fp8_e4m3")
    for name, kw in [("kv_scale", dict(kv_scale=bad)),
                     ("extra_kv_scale", dict(kv_scale=scale, extra_kv_cache=fp8, extra_indices=i,
                                             extra_kv_scale=bad))]:
        with pytest.raises((ValueError, TypeError)) as e:
            sparsemla.sparse_mla(q, fp8, i, sm_scale=0.1, kv_format="fp8_e4m3", backend="torch", **kw)
        assert str(e.value).startswith(name) and "expected a" in str(e.value), str(e.value)
    with pytest.raises((ValueError, TypeError), match="kv_scale"):
        sparsemla.quantize_kv(c.float(), "fp8_e4m3", kv_scale=bad)
    with pytest.raises(ValueError, match="only kv_format='fp8_e4m3'"):
        sparsemla.quantize_kv(c.float(), "fp8_ds_mla", kv_scale=0.5)
    # what the runtime does accept: NumPy's reals, and a one-element tensor as the cache's scale
    out = sparsemla.sparse_mla(q, fp8, i, sm_scale=np.float32(0.1), kv_format="fp8_e4m3",
                               kv_scale=torch.tensor(scale), backend="torch")
    ref = sparsemla.sparse_mla(q, fp8, i, sm_scale=0.1, kv_format="fp8_e4m3", kv_scale=scale, backend="torch")
    torch.testing.assert_close(out, ref)


def test_packed_format_errors_state_the_expected_layout():
    kv = torch.randn(128, 512)
    pages = sparsemla.quantize_kv(kv, "model1", page_size=64)
    q = torch.randn(2, 4, 512, dtype=torch.float16)
    i = torch.randint(0, 128, (2, 8), dtype=torch.int32)
    with pytest.raises(ValueError) as e:  # page size that does not match the page bytes
        sparsemla.sparse_mla(q, pages, i, sm_scale=0.1, kv_format="model1", page_size=32, backend="torch")
    assert "kv_cache" in str(e.value) and str(model1_page_bytes(32)) in str(e.value)
    with pytest.raises(ValueError) as e:  # no page size for a 2-D page table
        sparsemla.sparse_mla(q, pages, i, sm_scale=0.1, kv_format="model1", backend="torch")
    assert "page_size" in str(e.value)
    ds = sparsemla.quantize_kv(torch.randn(64, 576), "fp8_ds_mla", page_size=16)
    q576 = torch.randn(2, 4, 576, dtype=torch.float16)
    with pytest.raises(ValueError) as e:
        sparsemla.sparse_mla(q576, ds[..., :600], i.clamp(max=63), sm_scale=0.1, kv_format="fp8_ds_mla",
                             backend="torch")
    assert "656" in str(e.value) and "4 fp32 scales" in str(e.value)
    with pytest.raises(ValueError) as e:  # q's head dim must match the format
        sparsemla.sparse_mla(q, ds, i.clamp(max=63), sm_scale=0.1, kv_format="fp8_ds_mla", backend="torch")
    assert "q" in str(e.value) and "576" in str(e.value)


def test_triton_backend_on_cpu_without_the_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, c, i = _problem()
    with pytest.raises(ValueError, match="TRITON_INTERPRET"):
        sparsemla.sparse_mla(q, c, i, sm_scale=0.1, backend="triton")
