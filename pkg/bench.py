"""``sparsemla bench``: the benchmark suite of ../shared/anchors.md on the present GPU.

Per row (KV format, T query tokens, H heads, top-k 2048 random slots out of 262,144): our
kernel time (triton.testing.do_bench median; do_bench clears L2 before every call),
FlashInfer's FA3 wrapper in the same process where it supports the row (bf16 and fp8 per-tensor,
page_size=1: the top-k list is the page table), the ratio, the roofline fraction against the
measured copy bandwidth and the bf16 matmul rate, the config, and a bf16 correctness check
against the fp32 reference. Results: JSON + Markdown under benchmarks/results/.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from sparsemla.gen.gpu_measure import rel_err
from sparsemla.bench_plot import try_plot
from sparsemla.gen.render import atomic_write
from sparsemla.gen.suite import (DECODE_T, HEADS, PREFILL_H, PREFILL_T, SLOTS, SUITE_FORMATS, TOPK, format_list,
                                 positive_int_list)


@dataclass(frozen=True)
class Fmt:
    name: str  # row label
    kv_format: str
    d_qk: int
    page_size: int | None = None

    @property
    def d_v(self):
        return 512


# The suite's formats; page_size None: a flat [slots, d] cache.
FORMATS = {name: Fmt(name, fmt, d_qk, page if page > 1 else None)
           for name, (fmt, d_qk, page) in SUITE_FORMATS.items()}


def suite_rows(formats, tokens=None, heads=None, prefill=True):
    rows = []
    for f in formats:
        for T in tokens or DECODE_T:
            for H in heads or HEADS:
                rows.append((f, T, H))
        if prefill:
            for H in PREFILL_H:
                if heads is None or H in heads:
                    rows.append((f, PREFILL_T, H))
    return rows


def make_cache(fmt: Fmt, device, seed=0):
    """A random cache of SLOTS slots in ``fmt`` plus its kwargs for sparse_mla."""
    from sparsemla import quantize_kv
    g = torch.Generator(device=device).manual_seed(seed)
    kw = {}
    chunks = []
    for i in range(0, SLOTS, 1 << 16):  # quantize in chunks to bound the float32 temporary
        kv = torch.randn(min(1 << 16, SLOTS - i), fmt.d_qk, device=device, generator=g)
        chunks.append(kv)
    kv = torch.cat(chunks)
    if fmt.kv_format == "auto":
        cache = kv.to(torch.bfloat16)
    elif fmt.kv_format == "fp8_e4m3":
        cache, scale = quantize_kv(kv, "fp8_e4m3")
        kw["kv_scale"] = scale
    else:
        cache = quantize_kv(kv, fmt.kv_format, page_size=fmt.page_size)
        if fmt.kv_format == "model1":
            kw["page_size"] = fmt.page_size
    del kv
    return cache, kw


def roofline_us(fmt: Fmt, T, H, copy_gbs, mm_tflops):
    from sparsemla.gen.layout import kv_bytes_per_token
    flops = 2.0 * T * H * TOPK * (fmt.d_qk + fmt.d_v)
    nbytes = T * TOPK * kv_bytes_per_token(fmt.kv_format, fmt.d_qk) + T * H * (fmt.d_qk + fmt.d_v) * 2
    return max(flops / (mm_tflops * 1e12), nbytes / (copy_gbs * 1e9)) * 1e6, flops, nbytes


def copy_ceiling_gbs(device) -> float:
    """The device-to-device copy rate, GB/s of bytes read + written: a 1 GiB copy, do_bench's median."""
    from triton.testing import do_bench
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    ms = do_bench(lambda: b.copy_(a), warmup=25, rep=200, return_mode="median")
    return 2 * n / (ms * 1e-3) / 1e9


def measure_ceilings(device):
    from triton.testing import do_bench
    copy_gbs = copy_ceiling_gbs(device)
    x = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    ms = do_bench(lambda: x @ x, warmup=25, rep=200, return_mode="median")
    mm = 2 * 8192 ** 3 / (ms * 1e-3) / 1e12
    return copy_gbs, mm


class FlashInferAnchor:
    """FlashInfer's SM90 FA3 sparse-MLA trick: page_size=1, the top-k row is the page table."""

    def __init__(self, device):
        from flashinfer.mla import BatchMLAPagedAttentionWrapper
        self.ws = torch.empty(128 << 20, dtype=torch.uint8, device=device)
        self.cls = BatchMLAPagedAttentionWrapper
        self.version = __import__("flashinfer").__version__

    @staticmethod
    def supports(fmt: Fmt) -> bool:
        return fmt.kv_format in ("auto", "fp8_e4m3")

    def prepare(self, fmt: Fmt, cache, kw, q, indices, sm_scale):
        T, H, _ = q.shape
        dev = q.device
        w = self.cls(self.ws, backend="fa3")
        kpe = fmt.d_qk - 512
        qo = torch.arange(T + 1, dtype=torch.int32, device=dev)
        kv_indptr = qo * TOPK
        kv_len = torch.full((T,), TOPK, dtype=torch.int32, device=dev)
        kv_dtype = torch.bfloat16 if fmt.kv_format == "auto" else torch.float8_e4m3fn
        t0 = time.perf_counter()
        w.plan(qo, kv_indptr, indices.reshape(-1).contiguous(), kv_len, H, 512, kpe, 1, False, sm_scale,
               q_data_type=torch.bfloat16, kv_data_type=kv_dtype)
        plan_ms = (time.perf_counter() - t0) * 1e3
        flat = cache.view(kv_dtype).reshape(-1, 1, fmt.d_qk)
        ckv, kpe_c = flat[..., :512], flat[..., 512:]
        q_nope, q_pe = q[..., :512], q[..., 512:]
        extra = {"ckv_scale": kw["kv_scale"], "kpe_scale": 1.0} if fmt.kv_format == "fp8_e4m3" else {}
        return (lambda: w.run(q_nope, q_pe, ckv, kpe_c, **extra)), plan_ms


def graph_time_us(calls, reps=7):
    """Kernel time per call: ``calls`` (one per rotating input set, so the data they touch
    exceeds L2) captured once in a CUDA graph, replayed; median over ``reps`` replays.
    Host overhead (Python, launch) is excluded: what a serving engine's graph replay pays. Warmed up and
    captured on one side stream, as engines do (the runtime's buffers are per stream)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for c in calls:
            c()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for c in calls:
            c()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / len(calls))
    return sorted(times)[len(times) // 2]


def step_us(calls, n: int = 40) -> float:
    """Wall time per call of ``n`` back-to-back eager calls cycling over ``calls`` (host work,
    FlashInfer's plan() included, overlapping the GPU as in a serving loop), then a sync."""
    for c in calls[:2]:
        c()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        calls[i % len(calls)]()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def rotations(fmt, T) -> int:
    """Input sets per graph so that one replay gathers about 4x the H200's 60 MB L2."""
    from sparsemla.gen.layout import kv_bytes_per_token
    per_call = T * TOPK * kv_bytes_per_token(fmt.kv_format, fmt.d_qk)
    return max(2, min(64, -(-240_000_000 // per_call)))


class Journal:
    """A suite run's rows as they are measured, in ``path`` (rewritten atomically after each row), so that an
    interrupted run resumes: a later run with the same key (GPU, versions, template, FlashInfer and check
    settings) reuses the rows measured without error whose config is still the one it would run, and the
    ceilings they were computed with. Another key's file, or an unreadable one, is reported and started over."""

    def __init__(self, path: Path, key: dict, log=print):
        self.path, self.key = Path(path), key
        self.ceilings, self.rows = None, {}
        try:
            data = json.loads(self.path.read_text()) if self.path.exists() else None
        except (OSError, ValueError) as e:
            log(f"bench: {self.path} is unreadable ({type(e).__name__}: {e}): starting over")
            data = None
        if data is None:
            return
        if not isinstance(data, dict) or data.get("key") != key:
            log(f"bench: {self.path} is from another run (its key: {data.get('key') if isinstance(data, dict) else '?'}; "
                f"this run's: {key}): starting over")
            return
        self.ceilings = data.get("ceilings")
        self.rows = {(r["format"], r["T"], r["H"]): r for r in data.get("rows", [])}
        log(f"bench: resuming from {self.path}: {len(self.rows)} rows measured before")

    def reusable(self, fname: str, T: int, H: int, config) -> dict | None:
        """The row measured before for (fname, T, H) with ``config``, if it measured without error."""
        r = self.rows.get((fname, T, H))
        if r is None or r.get("config") != config.to_dict() or "error" in r or "fi_error" in r:
            return None
        return r

    def record(self, ceilings: dict, row: dict | None = None) -> None:
        self.ceilings = ceilings
        if row is not None:
            self.rows[(row["format"], row["T"], row["H"])] = row
        atomic_write(self.path, json.dumps(dict(key=self.key, ceilings=ceilings, rows=list(self.rows.values()))))

    def finish(self) -> None:
        """The run is complete (its results written): the journal goes."""
        self.path.unlink(missing_ok=True)


def run_suite(rows, device, *, configs=None, with_flashinfer=True, check=True, log=print, journal=None,
              progress=None):
    """Measure ``rows``; ``configs`` maps (format name, T, H) -> Config to override the dispatch. With a
    ``journal`` (``Journal``), rows it holds for the same config are reused and each new row is recorded in it.
    ``progress(done, total)`` is called after each row."""
    from sparsemla.gen.spec import KernelSpec
    from sparsemla.runtime.api import device_arch
    from sparsemla.runtime.dispatch import select_config

    anchor = None
    if with_flashinfer:
        try:
            anchor = FlashInferAnchor(device)
        except Exception as e:  # not installed, or no SM90 build: rows report it
            log(f"FlashInfer unavailable: {type(e).__name__}: {e}")
    if journal is not None and journal.ceilings:  # the rows reused were computed with these
        ceilings = journal.ceilings
    else:
        copy_gbs, mm = measure_ceilings(device)
        ceilings = dict(copy_gbs=copy_gbs, bf16_tflops=mm)
    log(f"ceilings: copy {ceilings['copy_gbs']:.0f} GB/s, bf16 matmul {ceilings['bf16_tflops']:.0f} TFLOP/s")
    if journal is not None:
        journal.record(ceilings)
    results = []
    by_fmt = {}
    for fmt, T, H in rows:
        by_fmt.setdefault(fmt, []).append((T, H))
    for fname, shapes in by_fmt.items():
        fmt = FORMATS[fname]
        cache = kw = None
        for T, H in shapes:
            spec = KernelSpec(kv_format=fmt.kv_format, d_qk=fmt.d_qk, num_heads=H, topk=TOPK,
                              page_size=fmt.page_size or 1, arch=device_arch(device))
            cfg = (configs or {}).get((fname, T, H)) or select_config(spec, T, device)
            row = journal.reusable(fname, T, H, cfg) if journal is not None else None
            if row is not None:
                log(format_row(row) + " (measured before: resumed)")
            else:
                if cache is None:
                    cache, kw = make_cache(fmt, device)
                row = measure_row(fmt, T, H, spec, cfg, cache, kw, device, ceilings, anchor, check, log)
                log(format_row(row))
                if journal is not None:
                    journal.record(ceilings, row)
            results.append(row)
            if progress is not None:
                progress(len(results), len(rows))
        del cache
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return dict(ceilings=ceilings, rows=results)


def measure_row(fmt: Fmt, T: int, H: int, spec, cfg, cache, kw, device, ceilings: dict, anchor, check: bool,
                log=print) -> dict:
    """One suite row: ``cfg`` on ``spec`` (T tokens, H heads) over rotating input sets, and FlashInfer's wrapper
    (``anchor``, None: not measured) on the same inputs."""
    from triton.testing import do_bench
    import sparsemla
    from sparsemla.runtime.dispatch import lookup

    g = torch.Generator(device=device).manual_seed(T * 1000 + H)
    sets = []
    for _ in range(rotations(fmt, T)):
        sets.append((torch.randn(T, H, fmt.d_qk, device=device, dtype=torch.bfloat16, generator=g),
                     torch.randint(0, SLOTS, (T, TOPK), device=device, dtype=torch.int32, generator=g),
                     torch.empty(T, H, fmt.d_v, device=device, dtype=torch.bfloat16)))
    q, indices, out = sets[0]
    sm_scale = fmt.d_qk ** -0.5

    def ours(q, indices, out):
        return lambda: sparsemla.sparse_mla(q, cache, indices, sm_scale=sm_scale, kv_format=fmt.kv_format,
                                            out=out, backend="triton", config=cfg, **kw)
    row = dict(format=fmt.name, kv_format=fmt.kv_format, d_qk=fmt.d_qk, T=T, H=H, topk=TOPK,
               config=cfg.to_dict(), rotations=len(sets))
    ref = None
    try:
        call = ours(q, indices, out)
        call()
        torch.cuda.synchronize()
        if check:
            n = min(T, 8)
            ref = sparsemla.sparse_mla(q[:n], cache, indices[:n], sm_scale=sm_scale,
                                       kv_format=fmt.kv_format, backend="torch", **kw)
            row["rel_err"] = rel_err(out[:n], ref)
        row["us"] = graph_time_us([ours(*st) for st in sets])
        row["host_us"] = do_bench(call, warmup=10, rep=50, return_mode="median") * 1e3
        # What a serving step pays through the dispatcher (backend "auto": the table's choice).
        entry = lookup(spec, T, device)
        row["auto_backend"] = entry.backend if entry is not None else "triton"
        row["auto_step_us"] = step_us([
            lambda st=st: sparsemla.sparse_mla(st[0], cache, st[1], sm_scale=sm_scale,
                                               kv_format=fmt.kv_format, out=st[2], **kw)
            for st in sets], n=min(40, max(8, 4 * len(sets))))
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        log(f"{fmt.name} T={T} H={H}: {row['error']}")
    floor, flops, nbytes = roofline_us(fmt, T, H, ceilings["copy_gbs"], ceilings["bf16_tflops"])
    row.update(floor_us=floor, tflops=None, gbs=None)
    if "us" in row:
        row.update(tflops=flops / row["us"] / 1e6, gbs=nbytes / row["us"] / 1e3,
                   roofline=floor / row["us"])
    if anchor is not None and anchor.supports(fmt):
        try:
            anchor.prepare(fmt, cache, kw, *sets[0][:2], sm_scale)  # FlashInfer's JIT build, untimed
            prepared = [anchor.prepare(fmt, cache, kw, *st[:2], sm_scale) for st in sets]
            fi_call, plan_ms = prepared[0]
            fo = fi_call()
            torch.cuda.synchronize()
            if ref is not None:
                row["fi_rel_err"] = rel_err(fo[:min(T, 8)], ref)
            row["fi_us"] = graph_time_us([p[0] for p in prepared])
            row["fi_host_us"] = do_bench(fi_call, warmup=10, rep=50, return_mode="median") * 1e3
            row["fi_plan_ms"] = sorted(p[1] for p in prepared)[len(prepared) // 2]
            row["fi_step_us"] = step_us([  # plan() + run() per step: new indices each step
                lambda st=st: anchor.prepare(fmt, cache, kw, st[0], st[1], sm_scale)[0]()
                for st in sets], n=min(40, max(8, 4 * len(sets))))
            if "auto_step_us" in row:
                row["step_speedup"] = row["fi_step_us"] / row["auto_step_us"]
            if "us" in row:
                row["speedup"] = row["fi_us"] / row["us"]
            del prepared
        except Exception as e:
            row["fi_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"{fmt.name} T={T} H={H} FlashInfer: {row['fi_error']}")
    return row


def _f(x, spec):
    return "-" if x is None else format(x, spec)


def format_row(r) -> str:
    from sparsemla.gen.spec import config_label
    cfg = config_label(r["config"])
    return (f"| {r['format']} | {r['T']} | {r['H']} | {_f(r.get('us'), '.1f')} | {_f(r.get('fi_us'), '.1f')} | "
            f"{_f(r.get('speedup'), '.2f')} | {_f(r.get('tflops'), '.0f')} | {_f(r.get('gbs'), '.0f')} | "
            f"{_f(r.get('roofline'), '.2f')} | {_f(r.get('host_us'), '.1f')} | {_f(r.get('fi_host_us'), '.1f')} | "
            f"{_f(r.get('fi_plan_ms'), '.2f')} | {r.get('auto_backend', '-')} | {_f(r.get('auto_step_us'), '.1f')} | "
            f"{_f(r.get('fi_step_us'), '.1f')} | {_f(r.get('step_speedup'), '.2f')} | "
            f"{_f(r.get('rel_err'), '.1e')} | {cfg} |")


HEADER = ("| format | T | H | ours us | FlashInfer us | FI/ours | TFLOP/s | GB/s | roofline | ours call us | "
          "FI run() us | FI plan ms | auto backend | auto step us | FI step us | FI step/auto step | rel err | "
          "config |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def provenance(device):
    import triton
    import sparsemla
    p = dict(gpu=torch.cuda.get_device_name(device), cc=".".join(map(str, torch.cuda.get_device_capability(device))),
             torch=torch.__version__, cuda=torch.version.cuda, triton=triton.__version__,
             sparsemla=sparsemla.__version__, date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    try:
        import flashinfer
        p["flashinfer"] = flashinfer.__version__
    except Exception:
        p["flashinfer"] = None
    from sparsemla.gen.render import attention_template_hash
    p["template_hash"] = attention_template_hash()
    p["options"] = runtime_options()
    return p


def runtime_options() -> dict:
    """The SPARSEMLA_* settings of this process that choose what runs (the runtime's options and tuned-table
    folder; not the render cache's place): a run with a non-default option says so, and its journal is not
    resumed by a run without it."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("SPARSEMLA_") and k != "SPARSEMLA_CACHE_DIR"}


def options_note(p: dict) -> str:
    """' Runtime options: K=V, ...' for a run's provenance with any (none before they were recorded)."""
    opts = p.get("options") or {}
    return " Runtime options: " + ", ".join(f"{k}={v}" for k, v in opts.items()) + "." if opts else ""


def gpu_dirname(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")


def write_results(res, out_dir, device, title="sparse MLA benchmark suite"):
    os.makedirs(out_dir, exist_ok=True)
    res["provenance"] = provenance(device)
    base = os.path.join(out_dir, gpu_dirname(res["provenance"]["gpu"]))
    atomic_write(Path(base + ".json"), json.dumps(res, indent=1))
    p = res["provenance"]
    md = [f"# {title} on {p['gpu']}", "",
          f"{p['date']}; torch {p['torch']}, CUDA {p['cuda']}, Triton {p['triton']}, FlashInfer {p['flashinfer']}, "
          f"sparsemla {p['sparsemla']} (template {p['template_hash']}).{options_note(p)} "
          f"top-k {TOPK} random slots of {SLOTS:,}. "
          f"'us' columns: kernel time per call from CUDA-graph replay over rotating input sets (one replay "
          f"gathers ~4x the L2), median of 7 replays, for both libraries. 'call us': do_bench median of one "
          f"eager Python call (L2 cleared), i.e. including host overhead. FI plan: host time of one plan(). "
          f"Step columns: wall time per call of back-to-back eager calls over the rotating sets, as a serving "
          f"loop runs them: 'auto' is sparse_mla's dispatch (the tuned table's backend), 'FI step' is FlashInfer's "
          f"plan() + run() (the indices change every step, so every step plans). "
          f"Ceilings measured in the same run: copy "
          f"{res['ceilings']['copy_gbs']:.0f} GB/s, bf16 matmul {res['ceilings']['bf16_tflops']:.0f} TFLOP/s. "
          f"roofline = max(FLOPs/matmul rate, bytes/copy rate) / our time. rel err: bf16 output vs the fp32 "
          f"reference on the first 8 tokens.", ""]
    picture = try_plot(res, base)
    md += [picture, ""] if picture else []
    md += [HEADER] + [format_row(r) for r in res["rows"]]
    atomic_write(Path(base + ".md"), "\n".join(md) + "\n")
    return base


def bench_main(argv=None):
    ap = argparse.ArgumentParser(prog="sparsemla bench", description=__doc__)
    ap.add_argument("--formats", type=format_list, default=list(FORMATS), help="comma list of " + ",".join(FORMATS))
    ap.add_argument("--tokens", type=positive_int_list, default=None, help="comma list of decode T (default the suite's)")
    ap.add_argument("--heads", type=positive_int_list, default=None, help="comma list of H (default 16,32,64,128)")
    ap.add_argument("--no-prefill", action="store_true")
    ap.add_argument("--no-flashinfer", action="store_true")
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--fresh", action="store_true",
                    help="measure every row (default: resume an interrupted run from its journal, OUT/GPU.partial.json)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("sparsemla bench needs a CUDA GPU", file=sys.stderr)
        return 2
    rows = suite_rows(args.formats, args.tokens, args.heads, not args.no_prefill)
    dev = torch.device("cuda")
    os.makedirs(args.out, exist_ok=True)
    prov = provenance(dev)
    key = {k: v for k, v in prov.items() if k != "date"} | dict(flashinfer_rows=not args.no_flashinfer)
    journal = Journal(Path(args.out) / (gpu_dirname(prov["gpu"]) + ".partial.json"), key, log=_stderr)
    if args.fresh:
        journal.rows, journal.ceilings = {}, None
    print(HEADER)
    res = run_suite(rows, dev, with_flashinfer=not args.no_flashinfer, journal=journal,
                    progress=lambda done, total: _stderr(f"bench: {done}/{total} rows"))
    base = write_results(res, args.out, dev)
    journal.finish()
    print(open(base + ".md").read())
    return 0


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
