"""sparse_mla under torch.compile on the GPU (first run on the H200 in session 28): the custom
operator of runtime/ops.py inside Inductor graphs, plain and with CUDA graphs (mode="reduce-overhead", with the
cache as a plain input and marked static), checked
against the eager call (the same kernels, so equal up to the graph's own arithmetic) and timed per call beside
it. The CPU tests cover Dynamo's graphs, AOT functionalization and opcheck; this adds Inductor's code and its
CUDA graphs around the Triton/Gluon kernels and the split-K workspace.
Run on the GPU after `pip install .`:  python3 benchmarks/calls/compile_gpu.py [--rows bf16:4:128,...] [--profile]
(--profile: after each mode's timing, the GPU work of 10 calls under torch.profiler -- kernels, copies, memsets
per call -- to show what a compiled call runs beside the attention kernels)
(--cpu: a smoke run of the script itself, on the CPU's reference path, without CUDA graphs)
"""
import argparse
import sys
import time

import torch
import torch._functorch.config
import torch._inductor.config

import sparsemla
from sparsemla.bench import FORMATS, make_cache
from sparsemla.gen.suite import SLOTS

ROWS = "bf16:4:128,bf16:128:128,fp8:16:64,model1:64:16,model1:1:128"


def wall_us(fn, dev, n=200):
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(5):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def gpu_work(label, fn, dev, calls=10):
    """Print the GPU activities (kernels, copies, memsets) of ``calls`` calls of ``fn``: us per call and
    count per call by name, the largest first, and their sum beside the wall time per call. (On the CPU,
    a smoke run: the operators' own CPU time instead.)"""
    from torch.profiler import ProfilerActivity, profile
    cuda = dev.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    fn()
    sync()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        for _ in range(calls):
            fn()
        sync()
    wall = (time.perf_counter() - t0) / calls * 1e6
    if cuda:
        rows = [(e.device_time_total / calls, e.count / calls, e.key) for e in prof.key_averages()
                if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time_total > 0]
    else:
        rows = [(e.self_cpu_time_total / calls, e.count / calls, e.key) for e in prof.key_averages()]
    rows.sort(reverse=True)
    what = "GPU work" if cuda else "CPU self time"
    print(f"  {label}: {what} {sum(r[0] for r in rows):.1f} us per call, wall {wall:.1f} us per call (profiled)")
    for us, n, key in rows[:12]:
        print(f"    {us:9.1f} us  x{n:5.1f}  {key[:110]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=ROWS, help="comma list of FORMAT:T:H")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--profile", action="store_true", help="print each mode's GPU work per call (torch.profiler)")
    args = ap.parse_args()
    dev = torch.device("cpu" if args.cpu else "cuda")
    # "+static": the cache marked with torch._dynamo.mark_static_address, which spares CUDA-graph trees their
    # copy of every non-static tensor input into their own buffer at each replay (the whole KV cache here).
    modes = ("default",) if args.cpu else ("default", "reduce-overhead", "reduce-overhead+static")
    # Each mode compiles afresh: with Inductor's FX-graph and AOT-autograd caches on, "+static" got the previous mode's
    # graph back, compiled with no static input, and still copied the cache at each replay (session 31, call 4).
    torch._inductor.config.fx_graph_cache = False
    if hasattr(torch._functorch.config, "enable_autograd_cache"):
        torch._functorch.config.enable_autograd_cache = False
    ok_all = True
    print("| format | T | H | mode | max abs diff vs eager | eager us/call | compiled us/call |\n|---|---|---|---|---|---|---|")
    for row in args.rows.split(","):
        name, T, H = row.split(":")
        fmt, T, H = FORMATS[name], int(T), int(H)
        cache, kw = make_cache(fmt, dev)
        gen = torch.Generator(device=dev).manual_seed(T * 1000 + H)
        q = torch.randn(T, H, fmt.d_qk, device=dev, generator=gen).to(torch.bfloat16)
        idx = torch.randint(0, SLOTS, (T, 2048), device=dev, dtype=torch.int32, generator=gen)
        sink = torch.randn(H, device=dev, generator=gen)

        def f(q, idx, sink):
            out, lse = sparsemla.sparse_mla(q, cache, idx, sm_scale=fmt.d_qk ** -0.5, kv_format=fmt.kv_format,
                                            attn_sink=sink, return_lse=True, **kw)
            return out.float() * 2, lse + 1

        want = f(q, idx, sink)
        for mode in modes:
            torch._dynamo.reset()
            if mode.endswith("+static"):
                torch._dynamo.mark_static_address(cache)
            g = torch.compile(f, mode=mode.split("+")[0], fullgraph=True)
            try:
                got = g(q, idx, sink)
                got = g(q, idx, sink)  # (reduce-overhead records its graph on a later call)
                got = [t.clone() for t in g(q, idx, sink)]
                diff = max((a - b).abs().max().item() for a, b in zip(got, want))
                ok = diff == 0 or diff < 1e-6
                n = 200 if dev.type == "cuda" else 3
                t_e, t_c = wall_us(lambda: f(q, idx, sink), dev, n), wall_us(lambda: g(q, idx, sink), dev, n)
            except Exception as e:  # report and go on
                ok, diff, t_e, t_c = False, float("nan"), float("nan"), float("nan")
                print(f"ERROR {name} T={T} H={H} {mode}: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
            ok_all &= ok
            print(f"| {name} | {T} | {H} | {mode} | {diff:.1e}{'' if ok else ' FAIL'} | {t_e:.1f} | {t_c:.1f} |")
            if args.profile and ok:
                for label, fn in (("eager", lambda: f(q, idx, sink)), (mode, lambda: g(q, idx, sink))):
                    gpu_work(f"{name} T={T} H={H} {label}", fn, dev)
    print("correctness:", "all ok" if ok_all else "FAILED")
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
