"""sparse_mla's per-signature fast path: a hit gives exactly what a miss gives, whatever the
signature covers (shapes, strides, dtypes, the cache tensor, options, environment) makes a
new one, bad calls raise as before, and the host time of a hit is printed (kernel stubbed)."""
import gc
import time

import pytest
import torch

import sparsemla
from sparsemla.gen.render import load_module
from sparsemla.gen.spec import Config
from sparsemla.runtime import api, dispatch, triton_backend

from helpers import make_cache, random_indices, reference64, rel_err

TOL = {torch.float16: 3e-3, torch.float32: 2e-5}


@pytest.fixture(autouse=True)
def _no_prepared_calls():
    api.clear_call_cache()
    yield
    api.clear_call_cache()


@pytest.fixture
def preparations(monkeypatch):
    """How many launches sparse_mla prepared (a miss that reached the kernel)."""
    count = [0]
    real = triton_backend.TritonLaunch.__init__

    def counting(self, *a, **k):
        count[0] += 1
        real(self, *a, **k)

    monkeypatch.setattr(triton_backend.TritonLaunch, "__init__", counting)
    return count


def _cpu_problem(T=2, H=16, topk=16, slots=64, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    cache, _, deq = make_cache("auto", 576, slots, None, dtype, gen)
    return cache, deq, torch.randn(T, H, 576, generator=gen).to(dtype), random_indices(T, topk, slots, gen)


CASES = {
    # auto cache, float32, topk_length, sinks, lse, split-K (the combine kernel), out given
    "auto_sink_lse_split": dict(kv_format="auto", d_qk=576, page=None, dtype=torch.float32, splits=2, sink=True,
                                lse=True, extra=False, out=True),
    # fp8 paged cache and an extra cache, each with its own kv_scale; out allocated per call
    "fp8_extra": dict(kv_format="fp8_e4m3", d_qk=576, page=16, dtype=torch.float16, splits=1, sink=False,
                      lse=True, extra=True, out=False),
    # three typed views of one packed cache
    "ds_mla_split": dict(kv_format="fp8_ds_mla", d_qk=576, page=16, dtype=torch.float16, splits=2, sink=False,
                         lse=False, extra=False, out=True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hit_equals_miss(case, preparations):
    c = CASES[case]
    gen = torch.Generator().manual_seed(11)
    T, H, topk, xtopk, slots = 3, 16, 32, 16, 128
    cache, kw, deq = make_cache(c["kv_format"], c["d_qk"], slots, c["page"], c["dtype"], gen)
    if c["extra"]:
        xcache, xkw, xdeq = make_cache(c["kv_format"], c["d_qk"], 96, None, c["dtype"], gen)
        kw.update(extra_kv_cache=xcache, extra_kv_scale=xkw["kv_scale"])
    sink = torch.randn(H, generator=gen) if c["sink"] else None
    out_buf = torch.empty(T, H, 512, dtype=c["dtype"]) if c["out"] else None

    def inputs():
        q = torch.randn(T, H, c["d_qk"], generator=gen).to(c["dtype"])
        idx = random_indices(T, topk, slots, gen)
        tl = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
        x = {}
        if c["extra"]:
            x = dict(extra_indices=random_indices(T, xtopk, 96, gen),
                     extra_topk_length=torch.randint(0, xtopk + 1, (T,), generator=gen, dtype=torch.int32))
        return q, idx, tl, x

    def call(q, idx, tl, x):
        res = sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, kv_format=c["kv_format"], topk_length=tl,
                                   attn_sink=sink, return_lse=c["lse"], out=out_buf, backend="triton",
                                   config=Config(16, 16, c["splits"], 4, 1), **kw, **x)
        out, lse = res if c["lse"] else (res, None)
        return out.clone(), (lse.clone() if lse is not None else None)

    def check(q, idx, tl, x, out, lse):
        ref_out, ref_lse = reference64(q, deq, idx, 0.05, 512, topk_length=tl, sink=sink,
                                       x_deq=xdeq if c["extra"] else None, x_indices=x.get("extra_indices"),
                                       x_topk_length=x.get("extra_topk_length"))
        assert rel_err(out, ref_out) < TOL[c["dtype"]]
        if lse is not None:
            fin = torch.isfinite(ref_lse)
            assert torch.equal(torch.isfinite(lse), fin)
            assert (lse[fin].double() - ref_lse[fin]).abs().max().item() < 2e-3

    first = inputs()
    out1, lse1 = call(*first)  # miss: validated and prepared
    check(*first, out1, lse1)
    assert preparations[0] == 1 and len(api._calls) == 1
    second = inputs()  # new values, same signature
    out2, lse2 = call(*second)  # hit
    assert preparations[0] == 1 and len(api._calls) == 1
    check(*second, out2, lse2)
    api.clear_call_cache()
    out3, lse3 = call(*second)  # the same call as a miss
    assert preparations[0] == 2
    assert torch.equal(out2, out3)
    assert lse2 is None or torch.equal(lse2, lse3)


def test_signature_changes_prepare_again(preparations):
    cache, deq, q, idx = _cpu_problem()
    run = lambda q, cache, idx, **k: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, backend="triton", **k)
    out = run(q, cache, idx)
    assert rel_err(out, reference64(q, deq, idx, 0.05, 512)[0]) < TOL[torch.float32]
    run(torch.randn_like(q), cache, idx)
    assert preparations[0] == 1

    def miss_and_correct(q, cache, deq, idx, **k):
        before = preparations[0]
        out = run(q, cache, idx, **k)
        assert preparations[0] == before + 1
        assert rel_err(out, reference64(q, deq, idx, 0.05, 512)[0]) < TOL[out.dtype]

    _, _, q3, idx3 = _cpu_problem(T=3, seed=1)
    miss_and_correct(q3, cache, deq, idx3)  # shape
    q_t = torch.randn(16, 2, 576).transpose(0, 1)
    miss_and_correct(q_t, cache, deq, idx)  # strides
    cache16, deq16 = cache.half(), cache.half().double()
    miss_and_correct(q.half(), cache16, deq16, idx, compute_dtype="fp32")  # dtypes
    cache2, deq2, _, _ = _cpu_problem(seed=2)  # another cache tensor of the same signature
    miss_and_correct(q, cache2, deq2, idx)
    wide = torch.zeros(64, 600)
    wide[:, :576] = cache
    miss_and_correct(q, wide[:, :576], deq, idx)  # the cache's strides
    miss_and_correct(q, cache, deq, idx, out=torch.empty(2, 16, 512))  # out given
    miss_and_correct(q, cache, deq, idx, topk_length=torch.full((2,), 16, dtype=torch.int32))
    miss_and_correct(q, cache, deq, idx, config=Config(16, 16, 2, 4, 1))
    run(q, cache, idx, out=torch.empty(2, 16, 512))  # each of these signatures again: hits
    run(q, wide[:, :576], idx)
    assert preparations[0] == 9


def test_bad_calls_raise_as_before():
    cache, _, q, idx = _cpu_problem()
    run = lambda **k: sparsemla.sparse_mla(**{"q": q, "kv_cache": cache, "indices": idx, "sm_scale": 0.05,
                                              "backend": "triton", **k})
    run()
    run()
    bad = idx.clone()
    bad[1, 3] = 64
    # What the signature does not cover is checked on a hit, too.
    with pytest.raises(ValueError, match=r"indices: slot ids must be -1 or in \[0, 64\) .* \[-1, 64\]"):
        run(indices=bad)
    with pytest.raises(ValueError, match=r"sm_scale=-1.0: expected a positive finite float"):
        run(sm_scale=-1.0)
    with pytest.raises(ValueError, match=r"sm_scale=None: expected a positive finite float"):
        run(sm_scale=None)
    # Anything else is a new signature, checked in full.
    with pytest.raises(ValueError, match=r"out: shape \(2, 16, 256\), expected \(2, 16, 512\)"):
        run(out=torch.empty(2, 16, 256))
    with pytest.raises(TypeError, match=r"out: dtype torch.float16, expected torch.float32"):
        run(out=torch.empty(2, 16, 512, dtype=torch.float16))
    with pytest.raises(TypeError, match=r"indices: dtype torch.int64"):
        run(indices=idx.long())
    with pytest.raises(ValueError, match=r"kv_cache \(shape \(64, 575\).*does not end in a contiguous dim of 576"):
        run(kv_cache=cache[:, :575])
    with pytest.raises(ValueError, match=r"kv_cache .* has dtype torch.float16 but q is torch.float32"):
        run(kv_cache=cache.half())
    with pytest.raises(TypeError, match=r"kv_cache: expected a torch.Tensor, got list"):
        run(kv_cache=[cache])
    with pytest.raises(TypeError, match=r"q: expected a torch.Tensor, got NoneType"):
        run(q=None)
    with pytest.raises(ValueError, match=r"topk_length: shape \(3,\), expected \(2,\)"):
        run(topk_length=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"page_size=\[16\]: expected a positive int"):
        run(page_size=[16])  # unhashable: no signature, the full checks
    with pytest.raises(ValueError, match=r"kv_scale=2.0: only kv_format='fp8_e4m3'"):
        run(kv_scale=2.0)
    assert len(api._calls) == 1


def test_environment_and_tables_are_part_of_the_signature(monkeypatch, preparations):
    cache, deq, q, idx = _cpu_problem()
    ref = reference64(q, deq, idx, 0.05, 512)[0]
    monkeypatch.setenv("SPARSEMLA_BACKEND", "triton")
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05)
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05)
    assert preparations[0] == 1
    monkeypatch.setenv("SPARSEMLA_BACKEND", "torch")  # backend="auto" follows the variable at once
    assert rel_err(sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05), ref) < 1e-6
    assert preparations[0] == 1
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, backend="triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="backend='triton' on a cpu tensor needs TRITON_INTERPRET=1"):
        sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, backend="triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert len(api._calls) == 2
    dispatch.clear_cache()  # a new tuned table may choose other configs
    assert len(api._calls) == 0


def test_replaced_run_triton_sees_hits(monkeypatch):
    cache, _, q, idx = _cpu_problem()
    for _ in range(2):
        sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, backend="triton")
    seen = []
    monkeypatch.setattr(triton_backend, "run_triton", lambda spec, cfg, *a, **k: seen.append(spec))
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, backend="triton")
    assert len(seen) == 1 and seen[0].num_heads == 16


def test_views_of_one_pool_hit_and_freed_caches_are_dropped(preparations):
    gen = torch.Generator().manual_seed(5)
    pool = torch.randn(2, 64, 576, generator=gen)  # two layers' caches
    q = torch.randn(2, 16, 576, generator=gen)
    idx = random_indices(2, 16, 64, gen)
    for layer in (0, 1, 0, 1):  # pool[layer] is a new view object each call
        out = sparsemla.sparse_mla(q, pool[layer], idx, sm_scale=0.05, backend="triton")
        assert rel_err(out, reference64(q, pool[layer].double(), idx, 0.05, 512)[0]) < TOL[torch.float32]
    assert preparations[0] == 2 and len(api._calls) == 2
    cache, _, _, _ = _cpu_problem()
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.05, backend="triton")
    assert len(api._calls) == 3
    del cache  # a freed cache's entry goes, and with it the memory it pinned
    gc.collect()
    assert len(api._calls) == 2
    del pool
    gc.collect()
    assert len(api._calls) == 0


def test_calls_are_bounded_and_the_least_recently_used_goes(monkeypatch, preparations):
    monkeypatch.setattr(api, "_CALLS_MAX", 3)
    cache, _, _, _ = _cpu_problem()
    problems = {T: _cpu_problem(T=T)[2:] for T in range(1, 6)}
    call = lambda T: sparsemla.sparse_mla(problems[T][0], cache, problems[T][1], sm_scale=0.05, backend="triton")
    for T in (1, 2, 3, 1, 4):  # T=1 used again before T=4 comes: T=2 is the least recently used
        call(T)
        assert len(api._calls) <= 3
    assert preparations[0] == 4
    call(1)
    call(3)
    assert preparations[0] == 4  # still kept
    call(2)
    assert preparations[0] == 5  # prepared again
    for T in range(1, 6):
        call(T)
        assert len(api._calls) <= 3


def _per_call_us(fn, n=2000, repeats=5):
    for _ in range(200):
        fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def test_dispatch_host_time(monkeypatch, capsys):
    """Host time of a call with the kernel launch stubbed; printed, never asserted."""
    T, H, topk, slots = 1, 16, 64, 4096
    cache = torch.randn(slots, 576).half()
    q = torch.randn(T, H, 576).half()
    idx = torch.arange(topk, dtype=torch.int32)[None].repeat(T, 1)
    out = torch.empty(T, H, 512, dtype=torch.half)
    launched = []
    call = lambda: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, out=out, backend="triton", check_indices=False)
    call()
    (prepared,) = api._calls.values()
    mod = load_module(prepared.spec)
    # The launch itself (JITFunction.run behind kernel[grid](...)) becomes a no-op.
    monkeypatch.setattr(mod.sparse_mla_fwd, "run", lambda *a, **k: launched.append(1))
    call()
    assert launched == [1]
    launch = prepared.launch
    args = launch.fwd.args.filled((q, idx, None, None, out, None, None, None, 0.04))
    kernel_us = _per_call_us(lambda: launch.fwd.proxy(*args, **launch.fwd.kw))
    launch_us = _per_call_us(lambda: launch(q, idx, 0.04, out))
    hit_us = _per_call_us(call)

    def miss():
        api.clear_call_cache()
        call()
    miss_us = _per_call_us(miss, n=200)
    run_us = _per_call_us(lambda: triton_backend.run_triton(prepared.spec, prepared.config, q, prepared.view, idx,
                                                             0.04, out, None))
    with capsys.disabled():
        print(f"\nsparse_mla host time, T={T} H={H} topk={topk}, out given, kernel launch stubbed (CPU):\n"
              f"  stubbed kernel[grid](...) alone   {kernel_us:6.2f} us\n"
              f"  prepared TritonLaunch call        {launch_us:6.2f} us\n"
              f"  sparse_mla, prepared (a hit)      {hit_us:6.2f} us  -> dispatch overhead "
              f"{hit_us - kernel_us:.2f} us over the bare launch\n"
              f"  sparse_mla, validated (a miss)    {miss_us:6.2f} us\n"
              f"  run_triton (prepare and launch)   {run_us:6.2f} us")


def test_direct_launcher_matches_the_jit_binding(monkeypatch):
    """_Direct (a hit's launch on CUDA, which bypasses Triton's per-call binding) passes the
    launcher every argument in the kernel's signature order with the per-call tensors in place,
    and declines (so the JIT launches) on a misaligned tensor, a launch hook or another device."""
    import inspect

    from triton import knobs

    gen = torch.Generator().manual_seed(3)
    cache = torch.randn(64, 576, generator=gen).half()
    q = torch.randn(2, 16, 576, generator=gen).half()
    idx = random_indices(2, 32, 64, gen)
    out = torch.empty(2, 16, 512, dtype=torch.half)
    cfg = Config(16, 16, 2, 4, 1)
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, out=out, backend="triton", config=cfg, return_lse=True)
    (prepared,) = api._calls.values()
    k = prepared.launch.fwd
    launched = []

    class Compiled:
        function, packed_metadata = "fn-handle", "meta"

        def run(self, *a):
            launched.append(a)

    monkeypatch.setattr(triton_backend, "current_stream", lambda: (lambda dev: f"stream{dev}"))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    first = (q, idx, None, None, out, torch.empty(2, 16), None, None, 0.04)
    a = k.args.filled(first)
    d = triton_backend._Direct(k.jit_fn, Compiled(), k.grid, k.args, a, k.constexprs, 0)

    q2, idx2, out2, lse2 = q.clone(), idx.clone(), torch.empty_like(out), torch.empty(2, 16)
    vals = (q2, idx2, None, None, out2, lse2, None, None, 0.5)
    assert d(vals)
    (got,) = launched
    assert got[:7] == (k.grid[0], 1, 1, "stream0", "fn-handle", "meta", None)
    names = list(inspect.signature(k.jit_fn.fn).parameters)
    bound = dict(zip(names, got[9:]))
    assert len(got) - 9 == len(names)
    assert bound["q"] is q2 and bound["idx"] is idx2 and bound["out"] is out2 and bound["lse"] is lse2
    assert bound["sm_scale"] == 0.5 and bound["num_heads"] == 16 and bound["num_splits"] == 2
    assert (bound["BLOCK_H"], bound["BLOCK_N"], bound["SPLIT_K"]) == (16, 16, True)
    assert bound["stride_qt"] == q.stride(0) and bound["stride_ik"] == idx.stride(1)

    odd = torch.empty(2 * 16 * 576 + 1, dtype=torch.half)[1:].view(2, 16, 576)  # 2-byte aligned
    assert not d((odd, idx2, None, None, out2, lse2, None, None, 0.5))
    hook = lambda *a: None
    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert not d(vals)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert d(vals)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert not d(vals)
    assert len(launched) == 2


def test_direct_launch_reserves_shared_memory_when_asked(monkeypatch):
    """_Direct with ``reserve`` (the PDL combine's programs, triton_backend._combine_reserve) launches with that
    much shared memory, opting in above 48 KB, and never with less than the kernel uses."""
    import types

    gen = torch.Generator().manual_seed(4)
    cache = torch.randn(64, 576, generator=gen).half()
    q = torch.randn(2, 16, 576, generator=gen).half()
    idx = random_indices(2, 32, 64, gen)
    sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, backend="triton", config=Config(16, 16, 2, 4, 1))
    (prepared,) = api._calls.values()
    k = prepared.launch.fwd
    a = k.args.filled((q, idx, None, None, torch.empty(2, 16, 512, dtype=torch.half), q, None, None, 0.04))
    opted = []
    monkeypatch.setattr(triton_backend, "_allow_dynamic_shared", lambda fn, n: opted.append((fn, n)))
    monkeypatch.setattr(triton_backend, "current_stream", lambda: (lambda dev: "stream"))

    def direct(reserve, uses=2048):
        compiled = types.SimpleNamespace(run=None, function="fn", packed_metadata=(4, 1, uses),
                                         metadata=types.SimpleNamespace(shared=uses))
        return triton_backend._Direct(k.jit_fn, compiled, k.grid, k.args, a, k.constexprs, 0, reserve).metadata

    assert direct(0) == (4, 1, 2048) and direct(49152) == (4, 1, 49152) and not opted
    assert direct(116736) == (4, 1, 116736) and opted == [("fn", 116736)]
    assert direct(49152, uses=65536) == (4, 1, 65536)  # the kernel's own need wins
