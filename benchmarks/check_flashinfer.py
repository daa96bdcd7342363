"""GPU check of the FlashInfer backend, the dispatch overhead and CUDA-graph capture (SM90).

  python benchmarks/check_flashinfer.py            # needs a GPU; FlashInfer for its part
  python benchmarks/check_flashinfer.py --overhead-only   # parts 3-4 only

1. run_flashinfer (through sparse_mla(backend="flashinfer")) against the PyTorch reference:
   bf16 and fp8_e4m3 caches, rope 64 and NoPE, -1 indices, topk_length, a row with nothing
   valid, every unreferenced slot NaN, a paged cache; out and lse errors.
2. Host time of FlashInfer's plan(), and of a flashinfer call with and without a re-plan.
3. Dispatch overhead: host time of a repeated sparse_mla call (out= given, tiny shape, after
   warm-up) against the bare launch, the same kernel[grid](...) calls with their arguments built
   beforehand; target under 10 us. Also shown: a call validated from scratch (a miss), run_triton
   (prepare and launch) and the prepared TritonLaunch alone.
4. CUDA graph: capture sparse_mla(..., out=out, backend="triton") once, change q, indices and
   topk_length in place, replay, compare with the reference; flashinfer inside capture must
   raise a clear error.
Exits 1 if a correctness check fails; timings are informational.
"""
from __future__ import annotations

import math
import sys
import time

import torch

import sparsemla
from sparsemla.runtime import api
from sparsemla.runtime import flashinfer_backend as fb
from sparsemla.runtime import triton_backend

DEV = torch.device("cuda")
OUT_TOL, LSE_TOL = 2e-2, 2e-2  # rel L2 of out (bf16), max abs of natural-log lse
failures: list[str] = []


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def problem(kv_format, d_qk, T, H, topk, slots, page_size=None, seed=0):
    """q, cache, extra sparse_mla kwargs, indices (-1 holes; if T > 1 the last row empty), topk_length."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    kv = torch.randn(slots, d_qk, device=DEV, generator=g)
    kw = {}
    if kv_format == "auto":
        cache = sparsemla.quantize_kv(kv.bfloat16(), "auto", page_size=page_size)
    else:
        cache, kw["kv_scale"] = sparsemla.quantize_kv(kv, "fp8_e4m3", page_size=page_size)
    q = torch.randn(T, H, d_qk, device=DEV, generator=g).bfloat16()
    idx = torch.randint(0, slots, (T, topk), device=DEV, generator=g, dtype=torch.int32)
    idx[torch.rand(T, topk, device=DEV, generator=g) < 0.2] = -1
    if T > 1:
        idx[-1] = -1
    tl = torch.randint(topk // 2, topk + 1, (T,), device=DEV, generator=g, dtype=torch.int32)
    # NaN in every slot no valid entry references (0xFF is NaN in bf16 and e4m3).
    pos = torch.arange(topk, device=DEV)
    used = idx[(idx >= 0) & (pos[None] < tl[:, None])].long()
    keep = torch.zeros(slots, dtype=torch.bool, device=DEV)
    keep[used] = True
    rows = cache.view(-1, d_qk)
    if kv_format == "fp8_e4m3":
        rows.view(torch.uint8)[~keep[:rows.shape[0]]] = 0xFF
    else:
        rows.view(torch.int16)[~keep[:rows.shape[0]]] = -1
    return q, cache, kw, idx, tl


def check_correctness():
    print("== 1. FlashInfer backend against the PyTorch reference")
    cases = [("auto", 576, 1, 128, None), ("auto", 576, 7, 16, None), ("auto", 512, 64, 128, None),
             ("auto", 576, 33, 64, 64), ("fp8_e4m3", 576, 7, 128, None), ("fp8_e4m3", 512, 64, 16, None),
             ("fp8_e4m3", 576, 100, 64, 64)]
    for kv_format, d_qk, T, H, page_size in cases:
        q, cache, kw, idx, tl = problem(kv_format, d_qk, T, H, 512, 16384, page_size)
        scale = d_qk ** -0.5
        args = dict(sm_scale=scale, kv_format=kv_format, topk_length=tl, return_lse=True, **kw)
        name = f"{kv_format:8s} kpe {d_qk - 512:2d} T={T:3d} H={H:3d} page={page_size or 1}"
        try:
            out, lse = sparsemla.sparse_mla(q, cache, idx, backend="flashinfer", **args)
        except Exception as e:
            failures.append(name)
            print(f"  {name}: FAILED {type(e).__name__}: {e}")
            continue
        ref, ref_lse = sparsemla.sparse_mla(q, cache, idx, backend="torch", **args)
        torch.cuda.synchronize()
        fin = torch.isfinite(ref_lse)
        e_out = rel_err(out, ref)
        e_lse = (lse[fin] - ref_lse[fin]).abs().max().item()
        empty_ok = T == 1 or bool((out[-1] == 0).all() and (lse[-1] == math.inf).all())
        ok = e_out < OUT_TOL and e_lse < LSE_TOL and empty_ok and bool(torch.isfinite(out).all())
        hint = ""
        if e_lse >= LSE_TOL:
            ratio = (lse[fin] / ref_lse[fin]).median().item()
            hint = f" (lse / ref median {ratio:.4f}; {math.log(2):.4f} would mean FlashInfer's lse is natural already)"
        print(f"  {name}: out rel err {e_out:.2e}, lse max abs err {e_lse:.2e}, empty row "
              f"{'ok' if empty_ok else 'WRONG'} [{'ok' if ok else 'FAIL'}]{hint}")
        if not ok:
            failures.append(name)
    # A forced flashinfer call it cannot run names why.
    q, cache, kw, idx, tl = problem("auto", 576, 2, 16, 64, 1024)
    try:
        sparsemla.sparse_mla(q, cache, idx, sm_scale=0.1, backend="flashinfer",
                             attn_sink=torch.zeros(16, device=DEV))
        failures.append("unsupported error")
        print("  attn_sink on flashinfer: no error [FAIL]")
    except ValueError as e:
        print(f"  attn_sink on flashinfer: {e} [ok]")


def host_us(fn, n=200, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def time_plan():
    print("== 2. FlashInfer plan() and per-call host time")
    for T, H in ((1, 128), (32, 128), (128, 128), (4096, 128)):
        q, cache, kw, _, _ = problem("auto", 576, T, H, 2048, 262144)
        idx = torch.randint(0, 262144, (T, 2048), device=DEV, dtype=torch.int32)  # no holes
        out = torch.empty(T, H, 512, device=DEV, dtype=torch.bfloat16)
        tls = [torch.full((T,), n, device=DEV, dtype=torch.int32) for n in (2048, 2047)]
        call = lambda tl: sparsemla.sparse_mla(q, cache, idx, sm_scale=576 ** -0.5, topk_length=tl, out=out,
                                               backend="flashinfer")
        call(tls[0])
        spec, st = next((k[2], s) for k, s in fb._states.items() if k[2].num_heads == H and k[2].topk == 2048)
        lengths = st.plan_key[1]

        def plan():
            st.plan_key = None
            st.plan(T, lengths, 576 ** -0.5, spec, torch.bfloat16)
        plan_us = host_us(plan, n=20, warmup=2)
        steady_us = host_us(lambda: call(tls[0]), n=50, warmup=5)
        flip = [0]

        def replanning():
            flip[0] ^= 1
            call(tls[flip[0]])
        replan_us = host_us(replanning, n=20, warmup=2)
        print(f"  T={T:4d} H={H}: plan() {plan_us:8.1f} us host; call without re-plan {steady_us:8.1f} us, "
              f"with re-plan {replan_us:8.1f} us (host, incl. the lengths' device-to-host copy)")


def bare_launch(launch, vals):
    """The kernel[grid](...) calls of a prepared TritonLaunch alone (Triton's JIT launch path),
    their arguments built beforehand from ``vals`` (TritonLaunch.__call__'s per-call values)."""
    calls = []
    for k in (launch.fwd, launch.combine):
        if k is not None:
            calls.append((k.proxy, k.args.filled(vals), k.kw))
    if len(calls) == 1:
        (kernel, a, kw), = calls
        return lambda: kernel(*a, **kw)
    return lambda: [kernel(*a, **kw) for kernel, a, kw in calls]


def time_dispatch():
    print("== 3. Dispatch overhead (sparse_mla host time vs the bare launch), T=1 H=16 topk=64")
    q, cache, kw, idx, _ = problem("auto", 576, 1, 16, 64, 4096)
    idx[0] = torch.arange(64, device=DEV, dtype=torch.int32)
    out = torch.empty(1, 16, 512, device=DEV, dtype=torch.bfloat16)
    call = lambda: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, out=out, backend="triton")
    api.clear_call_cache()
    call()
    prepared = next(iter(api._calls.values()))
    launch = prepared.launch
    vals = (q, idx, None, None, out, None, None, None, 0.04)
    bare = bare_launch(launch, vals)
    if launch.fwd.direct is None:
        print("  (no direct launcher: hits launch through Triton's JIT)")
    direct = (lambda: launch.fwd.direct(vals)) if launch.fwd.direct is not None else bare

    def miss():
        api.clear_call_cache()
        call()
    n = 5000
    auto = lambda: sparsemla.sparse_mla(q, cache, idx, sm_scale=0.04, out=out)
    run = lambda: triton_backend.run_triton(prepared.spec, prepared.config, q, prepared.view, idx, 0.04, out, None)
    times = {}
    for name, label, fn, calls in (
            ("triton", "sparse_mla backend='triton'    ", call, n),
            ("auto", "sparse_mla backend='auto'      ", auto, n),
            ("miss", "sparse_mla validated (a miss)  ", miss, n // 10),
            ("run", "run_triton (prepare, launch)   ", run, n),
            ("launch", "TritonLaunch (prepared)        ", lambda: launch(q, idx, 0.04, out), n),
            ("direct", "compiled launcher (_Direct)    ", direct, n),
            ("bare", "kernel[grid](...) (bare launch)", bare, n)):
        times[name] = us = host_us(fn, n=calls, warmup=200)
        print(f"  {label}: {us:6.2f} us/call")
    overhead = times["triton"] - times["bare"]
    print(f"  dispatch overhead: {overhead:.2f} us/call over the bare launch "
          f"[{'ok' if overhead < 10 else 'ABOVE the 10 us target'}] "
          f"({times['triton'] - times['run']:.2f} us over run_triton)")


def check_graph():
    print("== 4. CUDA graph: capture sparse_mla(backend='triton'), change inputs in place, replay")
    T, H, topk, slots = 4, 16, 512, 8192
    q, cache, kw, idx, tl = problem("auto", 576, T, H, topk, slots)
    kv = torch.randn(slots, 576, device=DEV).bfloat16()  # un-poisoned: new indices read anything
    out = torch.empty(T, H, 512, device=DEV, dtype=torch.bfloat16)
    call = lambda: sparsemla.sparse_mla(q, kv, idx, sm_scale=0.04, topk_length=tl, out=out, backend="triton")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):  # (where the warm-up ran: its split-K workspace)
        call()
    for trial in range(3):
        q.copy_(torch.randn_like(q, dtype=torch.float32).bfloat16())
        idx.copy_(torch.randint(-1, slots, idx.shape, device=DEV, dtype=torch.int32))
        tl.copy_(torch.randint(0, topk + 1, tl.shape, device=DEV, dtype=torch.int32))
        g.replay()
        torch.cuda.synchronize()
        ref = sparsemla.sparse_mla(q, kv, idx, sm_scale=0.04, topk_length=tl, backend="torch")
        e = rel_err(out, ref)
        ok = e < OUT_TOL
        print(f"  replay {trial}: out rel err {e:.2e} [{'ok' if ok else 'FAIL'}]")
        if not ok:
            failures.append(f"graph replay {trial}")
    if not fb.available():
        return
    g2 = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g2):
            sparsemla.sparse_mla(q, kv, idx, sm_scale=0.04, topk_length=tl, out=out, backend="flashinfer")
        failures.append("flashinfer in capture")
        print("  flashinfer inside capture: no error [FAIL]")
    except RuntimeError as e:
        print(f"  flashinfer inside capture: {e} [ok]")


def main():
    if not torch.cuda.is_available():
        print("no GPU")
        return 2
    cc = torch.cuda.get_device_capability()
    print(f"{torch.cuda.get_device_name()} (sm_{cc[0]}{cc[1]}), torch {torch.__version__}, "
          f"flashinfer {fb.version() or 'not installed'}")
    if "--overhead-only" in sys.argv:
        print("== 1-2 skipped (--overhead-only)")
    elif fb.available() and cc[0] == 9:
        check_correctness()
        time_plan()
    else:
        print("== 1-2 skipped: FlashInfer's SM90 path needs flashinfer on an SM90 GPU")
    time_dispatch()
    check_graph()
    print("FAILED: " + ", ".join(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
