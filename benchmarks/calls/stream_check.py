"""Session 27 (prepared without a GPU, not yet run): the runtime's per-stream buffers on the GPU.

Since session 27 the split-K workspace (with the FUSED kernels' counters), page_split's touched-page state and the
FlashInfer backend's buffers are one per (device, stream), and a CUDA graph captured on a stream where no eager call
made them gives each captured call buffers of its own from the graph's pool (runtime/triton_backend._bind_workspace,
runtime/paging._page_list). The CPU tests check the bookkeeping; this checks the kernels:
1. Two streams running the same split-K calls at once on different inputs, every round's outputs against the
   float64 reference: a FUSED launch (64-head Gluon programs, 2 splits), a combine-kernel launch, the Triton
   kernel's split-K, and touched page_split.
2. Graphs captured on a stream no eager call ran on: two graphs captured back to back on it, the second replayed
   first, inputs changed in place between replays.
3. Replay time of one captured call, warmed up on the capture stream (the workspace reused) and not (a buffer of
   its own, and for FUSED a memset node).
Run on the GPU after `pip install .`: python3 benchmarks/calls/stream_check.py
"""
import math
import sys

import torch

import sparsemla
from sparsemla.gen.gpu_measure import make_inputs, reference_rows, rel_err
from sparsemla.gen.layout import model1_page_bytes
from sparsemla.gen.spec import Config
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime import api, paging, triton_backend
from sparsemla.runtime.dispatch import select_config
from sparsemla.runtime.paging import page_split_reference

DEV = torch.device("cuda")
TOL = 2e-2  # bf16 outputs against float64 (gen.gpu_measure.TOLERANCE["bf16"])
failures = []


def report(name: str, ok: bool, detail: str = "") -> None:
    print(f"  {name}: {'ok' if ok else 'FAIL'} {detail}", flush=True)
    if not ok:
        failures.append(name)


def attention_case(fmt: str, T: int, H: int, config, seed: int):
    """(call(out) -> None, check(out) -> error) for one input set; ``config`` None: the runtime's choice."""
    spec = suite_spec(fmt, H, "sm90")
    kw = make_inputs(spec, T, DEV, slots=min(2 * T * spec.topk, 1 << 20), poison=True, seed=seed)
    sel, ref = reference_rows(kw)
    cfg = config or select_config(spec, T, DEV)

    def call(out):
        sparsemla.sparse_mla(**kw, out=out, backend="triton", config=cfg)

    def error(out):
        return rel_err(out[sel], ref) if torch.isfinite(out).all() else math.inf
    return spec, cfg, kw, call, error


CASES = (  # (name, format, T, H, config)
    ("FUSED (Gluon h64 s2)", "bf16", 32, 128, Config(64, 64, 2, 8, 2, gluon=True)),
    ("combine kernel (table's)", "bf16", 4, 128, None),
    ("Triton split-K (h64 s4)", "bf16", 8, 64, Config(64, 64, 4, 8, 2)),
)


def fresh_stream() -> torch.cuda.Stream:
    """A stream of the pool that no call has made a workspace or page_split state on."""
    for _ in range(64):
        s = torch.cuda.Stream()
        key = (DEV if DEV.index is not None else torch.device("cuda", torch.cuda.current_device()), s.cuda_stream)
        if key not in triton_backend._workspaces and key not in paging._list_buffers:
            return s
    raise RuntimeError("every pooled stream has a workspace")


def two_streams(rounds: int = 12) -> None:
    print("== 1. two streams at once, each round checked", flush=True)
    for name, fmt, T, H, config in CASES:
        a, b = attention_case(fmt, T, H, config, 1), attention_case(fmt, T, H, config, 2)
        spec, cfg = a[0], a[1]
        shape, dtype = (T, H, spec.d_v), a[2]["q"].dtype
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        for case, s in zip((a, b), streams):  # warm-up (compile, the stream's workspace)
            with torch.cuda.stream(s):
                case[3](torch.empty(shape, dtype=dtype, device=DEV))
        torch.cuda.synchronize()
        outs = {0: [], 1: []}
        for _ in range(rounds):
            for i, (case, s) in enumerate(zip((a, b), streams)):
                with torch.cuda.stream(s):
                    out = torch.full(shape, math.nan, dtype=dtype, device=DEV)
                    case[3](out)
                    outs[i].append(out)
        torch.cuda.synchronize()
        worst = max(case[4](o) for i, case in enumerate((a, b)) for o in outs[i])
        report(f"{name} T={T} H={H} s{cfg.num_splits}", worst <= TOL, f"(worst rel err {worst:.2e})")
        api.clear_call_cache()
    # touched page_split on two streams, different pools and ids
    P, N = 256, 512
    g = torch.Generator(device=DEV).manual_seed(3)
    pools = [torch.randint(0, 256, (N, model1_page_bytes(P)), generator=g, dtype=torch.uint8, device=DEV)
             for _ in range(2)]
    ids = [torch.randint(-1, N * P, (64, 2048), generator=g, dtype=torch.int32, device=DEV) for _ in range(2)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    outs = {0: [], 1: []}
    for r in range(rounds + 1):
        for i in range(2):
            with torch.cuda.stream(streams[i]):
                out = torch.full((N * P // 64, model1_page_bytes(64)), 0xA5, dtype=torch.uint8, device=DEV)
                paging.page_split(pools[i], src_page_size=P, touched_indices=ids[i], out=out)
                if r:  # (round 0: the warm-up)
                    outs[i].append(out)
    torch.cuda.synchronize()
    ok = all(torch.equal(o, page_split_reference(pools[i], src_page_size=P, touched_indices=ids[i],
                                                  out=torch.full_like(o, 0xA5)))
             for i in range(2) for o in outs[i])
    report("page_split touched", ok)


def fresh_capture_stream() -> None:
    print("== 2. graphs captured on a stream no eager call ran on", flush=True)
    for name, fmt, T, H, config in CASES:
        a, b = attention_case(fmt, T, H, config, 3), attention_case(fmt, T, H, config, 4)
        spec = a[0]
        shape, dtype = (T, H, spec.d_v), a[2]["q"].dtype
        a[3](torch.empty(shape, dtype=dtype, device=DEV))  # compile and prepare, on the default stream
        torch.cuda.synchronize()
        s = fresh_stream()
        graphs, outs = [], []
        for case in (a, b):
            out = torch.full(shape, math.nan, dtype=dtype, device=DEV)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=s):
                case[3](out)
            graphs.append(graph)
            outs.append(out)
        errs = []
        for trial in range(2):
            for i in (1, 0):  # the second graph first
                outs[i].fill_(math.nan)
                graphs[i].replay()
            torch.cuda.synchronize()
            errs += [case[4](o) for case, o in zip((a, b), outs)]
        report(f"{name} T={T} H={H}", max(errs) <= TOL, f"(worst rel err {max(errs):.2e})")
        api.clear_call_cache()
    P, N = 256, 256
    g = torch.Generator(device=DEV).manual_seed(5)
    pool = torch.randint(0, 256, (N, model1_page_bytes(P)), generator=g, dtype=torch.uint8, device=DEV)
    ids = [torch.randint(-1, N * P, (32, 2048), generator=g, dtype=torch.int32, device=DEV) for _ in range(2)]
    dst = torch.zeros((N * P // 64, model1_page_bytes(64)), dtype=torch.uint8, device=DEV)
    paging.page_split(pool, src_page_size=P, touched_indices=ids[0], out=dst)  # compile, default stream
    s, graphs = fresh_stream(), []
    for i in range(2):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            paging.page_split(pool, src_page_size=P, touched_indices=ids[i], out=dst)
        graphs.append(graph)
    ok = True
    for i in (1, 0, 1):
        before = dst.clone()
        graphs[i].replay()
        torch.cuda.synchronize()
        ok &= torch.equal(dst, page_split_reference(pool, src_page_size=P, touched_indices=ids[i], out=before))
    report("page_split touched", ok)


def replay_us(graph, n: int = 200) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(n):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / n


def replay_cost() -> None:
    print("== 3. replay time: warmed capture stream vs a fresh one", flush=True)
    print("| case | warmed us | fresh us | fresh / warmed |\n|---|---|---|---|")
    for name, fmt, T, H, config in CASES:
        a = attention_case(fmt, T, H, config, 6)
        out = torch.empty((T, H, a[0].d_v), dtype=a[2]["q"].dtype, device=DEV)
        times = []
        for warm in (True, False):
            s = fresh_stream()
            if warm:
                with torch.cuda.stream(s):
                    a[3](out)
            else:
                a[3](out)  # (compiled and prepared on the default stream)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=s):
                for _ in range(8):
                    a[3](out)
            times.append(replay_us(graph) / 8)
        print(f"| {name} T={T} H={H} | {times[0]:.2f} | {times[1]:.2f} | {times[1] / times[0]:.3f} |", flush=True)
        api.clear_call_cache()


def main() -> int:
    two_streams()
    fresh_capture_stream()
    replay_cost()
    print("stream_check:", "all ok" if not failures else f"FAILED: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
