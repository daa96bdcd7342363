"""Measure one config on the GPU, isolated in a child process: check, then time.

``GpuMeasurer`` is the tuner's ``measure(spec, config, num_tokens) -> Measurement``. Each
request runs in a long-lived spawned child that keeps its inputs between trials; a crash
(illegal address, abort) or a hang past ``timeout`` kills only the child, the trial is a
failure and the next request starts a fresh child. A child that raised is replaced too,
since its CUDA context may be broken.

Check: the full T tokens run on a cache whose every slot not referenced by the indices is
poisoned (NaN rows, quantized with ``quantize_kv``, so 0x7F bytes for fp8 values and NaN
scales / bf16 parts), about 3% of the indices are -1, and the output starts as NaN. Any NaN
in the output, or a relative error against ``sparse_mla(..., backend="torch")`` on the
first and last tokens above the tolerance (2e-2 for bf16), is a failure.
Time: CUDA-graph replay of many calls over rotating (q, indices) sets on a 262,144-slot
cache, enough sets that the KV they gather exceeds ~100 MB (more than L2), median of
repeats, per call. ``compare`` times the best config and the runtime's FlashInfer backend
(optional, imported only there), checked first, so the table can name the faster backend. It times
both as eager calls (do_bench): that backend cannot be captured on SM90 (its plan() reads the valid
counts on the host, one sync a call), so a call's whole cost is what a caller would pay for it, host
work included (bf16 T=1 H=128 on the H200: ~518 us, where the suite's graph replay of FlashInfer's
kernel alone gives ~16 us).

``python -m sparsemla.gen.gpu_measure '{"spec": KEY, "config": {...}, "num_tokens": T}'``
runs one measurement in-process and prints it as JSON (for a person debugging a config).
"""
from __future__ import annotations

import importlib
import json
import math
import statistics
import sys
import traceback
from dataclasses import asdict, dataclass
from multiprocessing import get_context

import torch

from .layout import kv_bytes_per_token
from .spec import Config, KernelSpec
from .suite import SLOTS

TIMING_SLOTS = SLOTS
GATHER_BYTES = 100e6  # KV gathered per pass over the rotating sets: well above any L2
MAX_SETS = 64
TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2, "fp32": 1e-3}
_DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass(frozen=True)
class Measurement:
    time_us: float
    error: float
    ok: bool
    reason: str = ""


def failed(reason: str, error: float = math.nan) -> Measurement:
    return Measurement(math.inf, error, False, reason)


# ---------------------------------------------------------------- inputs (any device)

FP8_SCALE = 6.0 / 448.0  # randn rows: |x| < 6 almost surely, so little clamping either way


def _cache(spec: KernelSpec, rows: torch.Tensor, page_size: int, poison: torch.Tensor | None):
    """A cache in ``spec.kv_format`` holding ``rows``; ``poison`` marks slots filled with NaN."""
    from sparsemla import quantize_kv
    fmt = spec.kv_format
    paged = page_size if page_size > 1 else None
    if poison is not None:
        rows = rows.masked_fill(poison[:, None], math.nan)
    kw = {}
    if fmt == "auto":
        cache = quantize_kv(rows.to(_DT[spec.q_dtype]), "auto", page_size=paged)
    elif fmt == "fp8_e4m3":
        cache, kw["kv_scale"] = quantize_kv(rows, "fp8_e4m3", kv_scale=FP8_SCALE, page_size=paged)
        if poison is not None:  # e4m3fn NaN is 0x7F, whatever the quantizer did with NaN
            cache.view(torch.uint8).view(-1, spec.d_qk)[poison] = 0x7F
    elif fmt == "fp8_ds_mla":
        cache = quantize_kv(rows, fmt, page_size=paged)
    else:  # model1: [pages, page_bytes], so page_size travels as an argument
        cache = quantize_kv(rows, fmt, page_size=page_size)
        kw["page_size"] = page_size
    return cache, kw


def make_inputs(spec: KernelSpec, num_tokens: int, device, *, slots: int, poison: bool,
                seed: int = 0) -> dict:
    """Keyword arguments of ``sparse_mla`` for ``spec`` with ``num_tokens`` random tokens.

    ``poison``: slots no token references hold NaN, and ~3% of the indices are -1.
    """
    device = torch.device(device)
    g = torch.Generator(device=device).manual_seed(seed)
    T, H = num_tokens, spec.num_heads

    def one_cache(topk, page, prefix):
        n = -(-slots // page) * page
        idx = torch.randint(0, n, (T, topk), generator=g, dtype=torch.int32, device=device)
        mask = None
        if poison:
            idx[torch.rand(T, topk, generator=g, device=device) < 0.03] = -1
            mask = torch.ones(n, dtype=torch.bool, device=device)
            mask[idx[idx >= 0].long()] = False
        cache, kw = _cache(spec, torch.randn(n, spec.d_qk, generator=g, device=device), page, mask)
        kw = {prefix + k: v for k, v in kw.items()}  # extra_page_size, extra_kv_scale
        return {prefix + "kv_cache": cache, prefix + "indices": idx, **kw}

    kw = dict(q=torch.randn(T, H, spec.d_qk, generator=g, device=device).to(_DT[spec.q_dtype]),
              sm_scale=spec.d_qk ** -0.5, kv_format=spec.kv_format, d_v=spec.d_v,
              compute_dtype=spec.compute_dtype, return_lse=spec.return_lse)
    kw.update(one_cache(spec.topk, spec.page_size, ""))
    if spec.extra_topk:
        kw.update(one_cache(spec.extra_topk, spec.extra_page_size, "extra_"))
    if spec.has_sink:
        kw["attn_sink"] = torch.randn(H, generator=g, device=device)
    return kw


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    if not torch.isfinite(a).all():
        return math.inf
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def reference_rows(kw: dict) -> tuple[list[int], object]:
    """The first and last four tokens, and the fp32 reference (``sparse_mla`` backend="torch")
    for them: a full-size reference at T=4096 would need tens of GB."""
    import sparsemla
    T = kw["q"].shape[0]
    sel = sorted({*range(min(T, 4)), *range(max(0, T - 4), T)})
    per_token = ("q", "indices", "extra_indices", "topk_length", "extra_topk_length")
    sub = {k: (v[sel] if k in per_token else v) for k, v in kw.items()}
    return sel, sparsemla.sparse_mla(**sub, backend="torch")


def check(spec: KernelSpec, config: Config, kw: dict, reference=None) -> Measurement:
    """Run ``config`` on poisoned inputs ``kw`` and compare with the reference
    (``reference_rows(kw)``, computed here unless given)."""
    import sparsemla
    q = kw["q"]
    T, H, _ = q.shape
    out = torch.full((T, H, spec.d_v), math.nan, dtype=q.dtype, device=q.device)
    res = sparsemla.sparse_mla(**kw, out=out, backend="triton", config=config)
    lse = res[1] if spec.return_lse else None
    if q.is_cuda:
        torch.cuda.synchronize()
    if not torch.isfinite(out).all():
        return failed("NaN/inf in the output (read a poisoned slot or left rows unwritten)", math.inf)
    sel, ref = reference if reference is not None else reference_rows(kw)
    if spec.return_lse:
        ref, ref_lse = ref
        if not torch.allclose(lse[sel], ref_lse, rtol=1e-3, atol=2e-2):
            return failed("lse differs from the reference")
    err = rel_err(out[sel], ref)
    tol = TOLERANCE[spec.compute_dtype]
    if not err <= tol:
        return failed(f"relative error {err:.3g} > {tol:g}", err)
    return Measurement(0.0, err, True)


# ---------------------------------------------------------------- timing (CUDA only)

def timing_sets(spec: KernelSpec, num_tokens: int, device, seed: int = 1) -> list[dict]:
    """Rotating input sets over one large cache, enough that one pass gathers > GATHER_BYTES."""
    per_set = num_tokens * (spec.topk + spec.extra_topk) * kv_bytes_per_token(
        spec.kv_format, spec.d_qk, torch.finfo(_DT[spec.q_dtype]).bits // 8)
    n = max(1, min(MAX_SETS, math.ceil(GATHER_BYTES / per_set)))
    base = make_inputs(spec, num_tokens, device, slots=TIMING_SLOTS, poison=False, seed=seed)
    g = torch.Generator(device=device).manual_seed(seed + 1)
    sets = []
    for i in range(n):
        kw = dict(base)
        if i:
            kw["q"] = torch.randn(base["q"].shape, generator=g, device=device).to(base["q"].dtype)
            for k in ("indices", "extra_indices"):
                if k in base:
                    kw[k] = torch.randint(0, _num_slots(base, k), base[k].shape, generator=g,
                                          dtype=torch.int32, device=device)
        kw["out"] = torch.empty(num_tokens, spec.num_heads, spec.d_v, dtype=kw["q"].dtype, device=device)
        sets.append(kw)
    return sets


def _num_slots(kw: dict, key: str) -> int:
    cache = kw["extra_kv_cache" if key.startswith("extra") else "kv_cache"]
    page = kw.get("extra_page_size" if key.startswith("extra") else "page_size")
    return cache.shape[0] * page if page else cache.shape[0] * (cache.shape[1] if cache.ndim == 3 else 1)


def time_calls(calls, target_ms: float = 5.0, repeats: int = 15) -> tuple[float, str]:
    """Median microseconds per call: CUDA-graph replay of ``calls`` repeated to ~target_ms
    (eager launches if capture fails)."""
    for c in calls:  # compile, allocate workspaces
        c()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for c in calls:
        c()
    end.record()
    end.synchronize()
    per_pass = max(start.elapsed_time(end), 1e-3)
    reps = max(1, min(2000 // len(calls), math.ceil(target_ms / per_pass)))
    n = reps * len(calls)

    def run():
        for _ in range(reps):
            for c in calls:
                c()

    mode = "graph"
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            run()
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):  # (the warm-up's stream: its workspace, as an engine captures)
            run()
        replay = graph.replay
    except Exception:
        torch.cuda.synchronize()
        replay, mode = run, "eager"
    replay()
    times = []
    for _ in range(repeats):
        start.record()
        replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times) * 1e3 / n, mode


# ---------------------------------------------------------------- the child's requests

class _State:
    def __init__(self, device="cuda"):
        self.device = torch.device(device)
        self.inputs: dict = {}

    def get(self, spec: KernelSpec, T: int):
        key = (spec.key, T)
        if key not in self.inputs:
            self.inputs.clear()
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            kw = make_inputs(spec, T, self.device, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
            self.inputs[key] = (kw, timing_sets(spec, T, self.device), reference_rows(kw))
        return self.inputs[key]


def _calls(sets, config, backend="triton"):
    import sparsemla
    return [lambda kw=kw: sparsemla.sparse_mla(**kw, backend=backend, config=config) for kw in sets]


def handle(req: dict, state: _State) -> dict:
    """One request: {"op": "measure" | "compare", "spec": key, "config": {...}, "num_tokens": T}."""
    spec, T = KernelSpec.from_key(req["spec"]), int(req["num_tokens"])
    config = Config.from_dict(req["config"]).check(spec)
    check_kw, sets, reference = state.get(spec, T)
    if req.get("op", "measure") == "measure":
        m = check(spec, config, check_kw, reference)
        if not m.ok:
            return asdict(m)
        us, mode = time_calls(_calls(sets, config))
        return asdict(Measurement(us, m.error, True, "" if mode == "graph" else "timed eagerly"))
    # compare: ours and the runtime's FlashInfer backend, both by do_bench (L2 cleared per
    # call) on one set, the way a served call runs; FlashInfer is checked before it counts.
    from triton.testing import do_bench

    from sparsemla.runtime import flashinfer_backend as fb
    out = dict(triton_bench_us=do_bench(_calls(sets[:1], config)[0], warmup=10, rep=100,
                                        return_mode="median") * 1e3, flashinfer_us=None, flashinfer_error=None)
    if not fb.available() or not fb.supports(spec):
        out["flashinfer_error"] = "not installed" if not fb.available() else fb.unsupported_reason(spec)
        return out
    try:
        got = _calls([check_kw], None, "flashinfer")[0]()
        got = got[0] if spec.return_lse else got
        if not torch.isfinite(got).all():
            out["flashinfer_error"] = "NaN/inf in FlashInfer's output"
            return out
        sel, ref = reference
        err = rel_err(got[sel], ref[0] if spec.return_lse else ref)
        if not err <= TOLERANCE[spec.compute_dtype]:
            out["flashinfer_error"] = f"relative error {err:.3g}"
            return out
        out["flashinfer_us"] = do_bench(_calls(sets[:1], None, "flashinfer")[0], warmup=10, rep=100,
                                        return_mode="median") * 1e3
    except Exception as e:  # no build for this GPU, or a FlashInfer error: Triton it is
        out["flashinfer_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return out


def _serve(conn, handler: str) -> None:
    mod, name = handler.split(":")
    fn = getattr(importlib.import_module(mod), name)
    state = _State() if fn is handle else None
    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", fn(req, state)))
        except BaseException as e:
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"))
            return  # a fresh child for the next request: this one's CUDA context may be broken


class GpuMeasurer:
    """``measure(spec, config, num_tokens)`` in a child process; ``compare`` for FlashInfer.

    ``handler`` ("module:function", called as ``fn(request, state)`` in the child) is
    replaceable for tests of the isolation itself.
    """

    def __init__(self, timeout: float = 60.0, handler: str = "sparsemla.gen.gpu_measure:handle"):
        self.timeout, self.handler = timeout, handler
        self._proc = self._conn = None

    def _start(self):
        ctx = get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.handler), daemon=True)
        self._proc.start()
        child.close()

    def close(self):
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join()
            self._conn.close()
        self._proc = self._conn = None

    def request(self, req: dict):
        """(True, result) or (False, why)."""
        if self._proc is None or not self._proc.is_alive():
            self.close()
            self._start()
        self._conn.send(req)
        if not self._conn.poll(self.timeout):
            self.close()
            return False, f"timed out after {self.timeout:g} s"
        try:
            status, result = self._conn.recv()
        except (EOFError, ConnectionError):
            self._proc.join(5)
            code = self._proc.exitcode
            self.close()
            return False, f"measuring process died (exit code {code})"
        if status != "ok":
            self.close()
            return False, result
        return True, result

    def __call__(self, spec: KernelSpec, config: Config, num_tokens: int) -> Measurement:
        ok, res = self.request(dict(op="measure", spec=spec.key, config=config.to_dict(), num_tokens=num_tokens))
        return Measurement(**res) if ok else failed(res.splitlines()[0] if res else "?")

    def compare(self, spec: KernelSpec, config: Config, num_tokens: int) -> dict:
        ok, res = self.request(dict(op="compare", spec=spec.key, config=config.to_dict(), num_tokens=num_tokens))
        return res if ok else dict(triton_bench_us=None, flashinfer_us=None, flashinfer_error=res)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# ---------------------------------------------------------------- parallel JIT warm-up

WARM_SLOTS = 4096  # divisible by 16 like the measured caches, so the kernels specialize alike
_warm_inputs: dict = {}


def _warm_one(spec_key: str, config: dict, device: str) -> str:  # top level: runs in a warm-up process
    import sparsemla
    spec = KernelSpec.from_key(spec_key)
    if spec_key not in _warm_inputs:
        _warm_inputs.clear()
        _warm_inputs[spec_key] = make_inputs(spec, 1, device, slots=WARM_SLOTS, poison=False)
    sparsemla.sparse_mla(**_warm_inputs[spec_key], backend="triton", config=Config.from_dict(config))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return ""


class JitWarmer:
    """``warm(spec, config) -> ''`` or why it failed: runs ``config`` once on a one-token input
    in one of ``jobs`` worker processes, so its kernels are compiled in parallel into Triton's
    on-disk cache and the measuring process then only loads them. Tuner threads call it
    concurrently; a worker that crashes or hangs past ``timeout`` takes the pool down and the
    next call starts a new one (the trial then goes on to the measurer, which decides)."""

    def __init__(self, jobs: int, timeout: float = 120.0, device: str = "cuda"):
        import threading
        self.jobs, self.timeout, self.device = jobs, timeout, device
        self._lock = threading.Lock()
        self._pool = None

    def _get_pool(self):
        from concurrent.futures import ProcessPoolExecutor
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(self.jobs, mp_context=get_context("spawn"))
            return self._pool

    def close(self):
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            for p in list(getattr(pool, "_processes", {}).values()):
                p.kill()  # a hung kernel never returns: shutdown alone would wait for it
            pool.shutdown(wait=False, cancel_futures=True)

    def __call__(self, spec: KernelSpec, config: Config) -> str:
        from concurrent.futures import TimeoutError as FutureTimeout
        from concurrent.futures.process import BrokenProcessPool
        try:
            return self._get_pool().submit(_warm_one, spec.key, config.to_dict(), self.device).result(self.timeout)
        except (FutureTimeout, BrokenProcessPool) as e:
            self.close()
            return f"warm-up: {type(e).__name__}: {str(e)[:200]}"
        except Exception as e:  # the config raised in the worker; the pool is fine
            return f"warm-up: {type(e).__name__}: {str(e)[:200]}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__)
        return 2
    req = json.loads(argv[0])
    print(json.dumps(handle(req, _State())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
