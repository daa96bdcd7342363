"""Random problems and random valid configs through the Triton kernel (Triton's interpreter) against the fp64
reference: formats and page sizes, token and head counts (masked head blocks), top-k lengths, invalid and
past-the-cache slots, all-invalid rows, topk_length, +/-inf sinks, an extra cache with its own page size and
scale, non-contiguous q and out, LSE, fp16/fp32 compute, and any split, tile, warp and stage choice the
search space holds. Fresh seeds every run (SPARSEMLA_FUZZ_SEED fixes the first; SPARSEMLA_FUZZ_CASES sets
how many, default 24); a failure names its seed, which reproduces it."""
import os
import random
import time

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.gen.search_space import search_space  # noqa: E402
from sparsemla.gen.spec import Config, KernelSpec  # noqa: E402

from helpers import make_cache, poison_unreferenced, random_indices, reference64, rel_err  # noqa: E402

FORMATS = [("auto", 576, None), ("auto", 512, None), ("auto", 576, 16), ("fp8_e4m3", 576, None),
           ("fp8_e4m3", 512, 32), ("fp8_ds_mla", 576, 16), ("fp8_ds_mla", 576, 64), ("model1", 512, 64),
           ("model1", 512, 16), ("model1", 512, 128)]


def one(rng: random.Random, seed: int):
    """One random problem, option set and config from ``rng`` (tensors from ``seed``): (its description, what
    went wrong, empty if nothing)."""
    fmt, d_qk, page = rng.choice(FORMATS)
    T = rng.choice([1, 2, 3, 5, 9])
    H = rng.choice([1, 3, 8, 16, 20, 33, 64])
    topk = rng.choice([1, 7, 16, 64, 100, 130])
    q_dtype = rng.choice([torch.float32, torch.float16])
    slots = rng.choice([64, 200, 512])
    if page:
        slots = -(-slots // page) * page
    gen = torch.Generator().manual_seed(seed)
    cache, kw, deq = make_cache(fmt, d_qk, slots, page, q_dtype if fmt == "auto" else torch.float32, gen)
    idx = random_indices(T, topk, slots, gen, invalid_frac=rng.choice([0.0, 0.2, 0.9]))
    if rng.random() < 0.3:
        idx[rng.randrange(T)] = -1
    if rng.random() < 0.2:  # past the cache: skipped
        idx[0, 0] = slots + 3
    tlen = None
    if rng.random() < 0.5:
        tlen = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
    sink = None
    if rng.random() < 0.4:
        sink = torch.randn(H, generator=gen)
        if H > 2:
            sink[0], sink[1] = float("inf"), float("-inf")
    x = {}
    x_deq = x_idx = x_len = None
    if rng.random() < 0.4:
        x_page = rng.choice([page, 16, 64]) if page else None
        if fmt == "fp8_ds_mla":
            x_page = page
        x_slots = -(-rng.choice([64, 128]) // (x_page or 1)) * (x_page or 1)
        xcache, xkw, x_deq = make_cache(fmt, d_qk, x_slots, x_page, q_dtype if fmt == "auto" else torch.float32, gen)
        xtopk = rng.choice([1, 16, 40])
        x_idx = random_indices(T, xtopk, x_slots, gen)
        x_len = torch.randint(0, xtopk + 1, (T,), generator=gen, dtype=torch.int32) if rng.random() < 0.5 else None
        x = dict(extra_kv_cache=xcache, extra_indices=x_idx, extra_topk_length=x_len)
        if fmt == "model1":
            x["extra_page_size"] = x_page
        if "kv_scale" in xkw:
            x["extra_kv_scale"] = xkw["kv_scale"]
        refx = x_idx.flatten() if x_len is None else torch.cat([x_idx[t, :int(x_len[t])] for t in range(T)])
        x["extra_kv_cache"] = poison_unreferenced(xcache, fmt, x_page or 1, refx)
    ref_ids = idx.flatten() if tlen is None else torch.cat([idx[t, :int(tlen[t])] for t in range(T)])
    cache = poison_unreferenced(cache, fmt, page or 1, ref_ids[ref_ids < slots])
    q = torch.randn(T, H, d_qk, generator=gen).to(q_dtype)
    if rng.random() < 0.3:  # non-contiguous q
        q = torch.randn(H, T, d_qk + 8, generator=gen).to(q_dtype).transpose(0, 1)[:, :, :d_qk]
    out = None
    if rng.random() < 0.3:
        out = torch.full((H, T, 512), float("nan"), dtype=q_dtype).transpose(0, 1)
    compute = "fp32" if q_dtype == torch.float32 else rng.choice(["fp16", "fp32"])
    spec = KernelSpec(kv_format=fmt, d_qk=d_qk, num_heads=H, topk=topk, page_size=page or 1, arch="sm90",
                      q_dtype="fp32" if q_dtype == torch.float32 else "fp16", compute_dtype=compute,
                      has_sink=sink is not None, extra_topk=x_idx.shape[1] if x_idx is not None else 0,
                      extra_page_size=(x.get("extra_page_size") or 1) if x else 1)
    space = search_space(spec)
    space.pop("gluon", None)
    cfg = None
    for _ in range(20):
        cand = Config(**{k: rng.choice(v) for k, v in space.items()})
        try:
            cfg = cand.check(spec)
            break
        except ValueError:
            continue
    sm_scale = d_qk ** -0.5 * rng.choice([0.5, 1.0, 3.0])
    ret_lse = rng.random() < 0.5
    desc = (f"{fmt} d{d_qk} p{page} T{T} H{H} k{topk} {q_dtype} c{compute} sink={sink is not None} "
            f"tlen={tlen is not None} extra={bool(x)} lse={ret_lse} out={out is not None} cfg={cfg}")
    res = sparsemla.sparse_mla(q, cache, idx, sm_scale=sm_scale, kv_format=fmt, topk_length=tlen, attn_sink=sink,
                               return_lse=ret_lse, out=out, backend="triton", config=cfg, compute_dtype=compute, check_indices=False,
                               **kw, **x)
    o, l = res if ret_lse else (res, None)
    ref, ref_lse = reference64(q.float(), deq, idx, sm_scale, 512, topk_length=tlen, sink=sink, x_deq=x_deq,
                               x_indices=x_idx, x_topk_length=x_len)
    tol = 2e-5 if compute == "fp32" and q_dtype == torch.float32 else 3e-3
    bad = []
    if not torch.isfinite(o).all():
        bad.append("non-finite out")
    err = rel_err(o, ref)
    if not err < tol:
        bad.append(f"out rel err {err:.2e}")
    if out is not None and o.data_ptr() != out.data_ptr():
        bad.append("out not used")
    if ret_lse:
        fin = torch.isfinite(ref_lse)
        if not torch.equal(torch.isinf(l), ~fin) or (fin.any() and (l[fin].double() - ref_lse[fin]).abs().max() > 1e-3):
            bad.append("lse")
    return desc, bad



_FIRST = int(os.environ.get("SPARSEMLA_FUZZ_SEED", time.time_ns() % (1 << 30)))


@pytest.mark.parametrize("case", range(int(os.environ.get("SPARSEMLA_FUZZ_CASES", "24"))))
def test_random_problem_and_config(case):
    seed = _FIRST + case
    desc, bad = one(random.Random(seed), seed)
    assert not bad, f"SPARSEMLA_FUZZ_SEED={seed} SPARSEMLA_FUZZ_CASES=1: {desc}: {bad}"
