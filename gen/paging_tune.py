"""The paging kernels' tuner: one Optuna study per (GPU, spec, kernel path, bucket), like the attention tuner.

    sparsemla tune-paging [--trials N] [--only SUBSTRING,...] [--ship | --out DIR] [--pool-gb GB]
                          [--page-size 64 --topk 2048 --src-page-size 256 --dst-page-size 64]

A problem (``PagingProblem``) is a spec's kernel path (``gen.paging.PATHS``) at one bucket: rows for
convert_indices and pack_valid_prefix, ids for page_split of touched pages, source pages for page_split of
all pages (one bucket: a whole pool). Each study enqueues the arch's default config first, then samples
``search_space``; a config that ``PagingConfig.check`` refuses is pruned before any GPU time ("rejected").
A trial runs the public function with the config on the problem's inputs and compares the result with the
PyTorch reference byte for byte (page_split into a destination filled with a poison byte, so a missed,
stray or padding write shows; touched pages: the first call, which takes the graph-only paths, an eager
call and a replayed CUDA graph), then times it (``PagingMeasurer``: a CUDA graph of back-to-back calls,
replays event-timed, median per call). A wrong result or a crash is state FAIL and never selected. The
fastest few and the default are measured again, interleaved, and the best median wins, so a table entry
is never slower than the default by the tuner's own measurement. Studies live in an Optuna journal per GPU
(resumable); results go to ``tuned/<gpu>/paging.json`` (``gen.paging_table``), which the runtime reads.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import optuna
from optuna.trial import TrialState

from .layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES, model1_page_bytes
from .paging import (ConvertIndicesSpec, PackValidPrefixSpec, PageSplitSpec, PagingConfig, PATHS, check_path,
                     default_config_for, spec_family)
from .paging_table import (PagingEntry, entry_key, load_tables, paging_provenance, paging_template_hash, split_key,
                           write_table)
from .render import cache_dir
from .spec import next_pow2
from .tuned_table import device_provenance, gpu_dirname, package_dir, stand_in_gpus, today, user_dir

ROWS = (1, 32, 256, 2048)  # convert_indices / pack_valid_prefix buckets (query tokens)
IDS = (2048, 16384, 131072, 524288)  # page_split touched buckets: T x 2048 ids, T = 1, 8, 64, 256


@dataclass(frozen=True)
class PagingProblem:
    """A spec's kernel ``path`` at bucket ``size`` (rows, ids or source pages)."""

    spec: object
    path: str
    size: int

    def __post_init__(self):
        check_path(self.spec, self.path)
        if not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"PagingProblem.size={self.size!r} for {self.key}: expected a positive int")

    @property
    def key(self) -> str:
        return entry_key(self.spec, self.path)

    @property
    def label(self) -> str:
        return f"{self.key} {PATHS[spec_family(self.spec)][self.path]}={self.size}"

    @property
    def default(self) -> PagingConfig:
        """The arch's untuned config of this path."""
        return default_config_for(self.spec, self.path)


def shipped_problems(arch: str, page_size: int = 64, topk: int = 2048, src_page_size: int = 256,
                     dst_page_size: int = 64) -> list[PagingProblem]:
    """What a GPU's table holds, each path at each bucket: by default the shipped shapes (page 64, top-k 2048,
    MODEL1 256 -> 64); a table entry serves calls of its spec's shapes only (others run the defaults)."""
    conv, pack = ConvertIndicesSpec(page_size, topk, arch), PackValidPrefixSpec(topk, arch)
    split = PageSplitSpec(src_page_size, dst_page_size, arch)
    return ([PagingProblem(split, "touched", n) for n in reversed(IDS)]  # (the slowest kernels first)
            + [PagingProblem(split, "all", 1)]
            + [PagingProblem(conv, p, t) for p in ("plain", "compact") for t in ROWS]
            + [PagingProblem(pack, "plain", t) for t in ROWS])


def search_space(problem: PagingProblem) -> dict[str, list]:
    """The PagingConfig fields a study searches for ``problem`` (the others keep their defaults)."""
    spec, path = problem.spec, problem.path
    warps = [1, 2, 4, 8, 16]
    if path == "touched":  # the fields session 4-19's sweeps found to matter; lead_min_ids is the bucket's
        return dict(num_warps=[4, 8, 16], programs_per_sm=[1, 2, 4, 8], mark_copies=[1, 2, 4],
                    mark_spacing=[1, 32, 128], mark_check=[False, True], mark_dedup=[False, True],
                    mark_claim=[False, True], chunks=[0, 4, 8], lead_split=[0, 8, 32], tma_stages=[0, 2, 3, 4])
    if path == "all":
        words = spec.dst_page_size * M1_DATA_ROW_BYTES // 8
        return dict(block=[b for b in (256, 512, 1024, 2048, 4096) if b <= max(256, next_pow2(words))],
                    num_warps=warps)
    width = spec.topk if isinstance(spec, ConvertIndicesSpec) else spec.width
    top = min(8192, max(64, next_pow2(width)))
    return dict(block=[b for b in (64, 128, 256, 512, 1024, 2048, 4096, 8192) if b <= top], num_warps=warps)


def space_size(space: dict) -> int:
    return math.prod(len(v) for v in space.values())


def config_from_params(problem: PagingProblem, params: dict) -> PagingConfig:
    """A sampled config: the default's fields with ``params`` over them (a touched call's bucket decides
    whether it takes the lead share, so a sampled lead share starts at 0 ids)."""
    base = default_config_for(problem.spec, problem.path).to_dict()
    if problem.path == "touched":
        base["lead_min_ids"] = 0
    return PagingConfig(**{**base, **params})


class TrialFailed(Exception):
    """A config ran but gave a wrong result (its message says where)."""


# --------------------------------------------------------------------------- inputs and checks

def _bytes_moved(spec: PageSplitSpec, pages: int) -> int:
    """Bytes page_split reads and writes for ``pages`` source pages (data and scale rows; padding untouched)."""
    return 2 * pages * spec.src_page_size * (M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES)


class Inputs:
    """One problem's inputs on ``device``, its reference result, and ``run(config)`` / ``check()``.

    ``pool_bytes``: the MODEL1 source pool of page_split problems; ``max_blocks`` of convert_indices'
    block tables. Random, with -1 entries, out-of-range blocks and negative block ids where they apply."""

    POISON = 0xA5

    def __init__(self, problem: PagingProblem, device, pool_bytes: int, max_blocks: int, seed: int = 0):
        import torch

        from sparsemla.runtime import paging
        self.problem, self.torch, self.paging = problem, torch, paging
        g = torch.Generator(device=device).manual_seed(seed)
        spec, n = problem.spec, problem.size
        self.copy_bytes = None
        if isinstance(spec, ConvertIndicesSpec):
            reqs = 16
            table = torch.randperm(reqs * max_blocks, device=device, generator=g).to(torch.int32).view(reqs, max_blocks)
            table[:, -max(1, max_blocks // 8):] = -1  # unassigned tail blocks
            req = torch.randint(0, reqs, (n,), device=device, dtype=torch.int32, generator=g)
            req[n // 2] = -1  # a request id outside the table: the row is all -1
            self.args = (req, table,
                         torch.randint(-1, (max_blocks + 2) * spec.page_size, (n, spec.topk), device=device,
                                       dtype=torch.int32, generator=g))
            self.kw = dict(page_size=spec.page_size, return_valid_counts=problem.path == "compact")
            self.want = paging.convert_indices_reference(*self.args, **self.kw)
            self.workload = f"T={n}, topk={spec.topk}, page {spec.page_size}, 16 requests x {max_blocks} blocks"
        elif isinstance(spec, PackValidPrefixSpec):
            W = spec.width
            self.slots = torch.randint(-1, 1 << 24, (n, W), device=device, dtype=torch.int32, generator=g)
            lens = torch.randint(0, W + 1, (n,), device=device, generator=g)
            self.indptr = torch.zeros(n + 1, dtype=torch.int32, device=device)
            self.indptr[1:] = torch.cumsum(lens, 0)
            self.out = torch.empty(n * W, dtype=torch.int32, device=device)
            self.want = paging.pack_valid_prefix_reference(self.slots, self.indptr,
                                                           out=torch.full_like(self.out, -7))
            self.workload = f"T={n}, W={W}, {int(lens.sum())} kept"
        else:
            P, D = spec.src_page_size, spec.dst_page_size
            pages = max(2, pool_bytes // model1_page_bytes(P))
            self.src = torch.empty(pages, model1_page_bytes(P), dtype=torch.uint8, device=device)
            self.src.random_(0, 256, generator=g)
            self.dst = torch.empty(pages * (P // D), model1_page_bytes(D), dtype=torch.uint8, device=device)
            self.kw = dict(src_page_size=P, dst_page_size=D)
            if problem.path == "touched":  # a decode step's ids over 1/16 of the pages, 10% -1
                hot = torch.randperm(pages, device=device, generator=g)[:max(1, pages // 16)]
                tok = hot[torch.randint(0, hot.numel(), (n,), device=device, generator=g)] * P
                tok = (tok + torch.randint(0, P, (n,), device=device, generator=g)).to(torch.int32)
                tok[torch.rand(n, device=device, generator=g) < 0.1] = -1
                self.kw["touched_indices"] = tok
                moved = int(torch.unique(tok[tok >= 0] // P).numel())
                self.workload = f"{n} ids over {moved} of {pages} pages of {P} -> {D}"
            else:
                moved = pages
                self.workload = f"{pages} pages of {P} -> {D}"
            self.copy_bytes = _bytes_moved(spec, moved) // 2
            self.want = paging.page_split_reference(self.src, **self.kw, out=self._poisoned().clone())

    def _poisoned(self):
        return self.dst.fill_(self.POISON)

    def run(self, config: PagingConfig):
        """One call of the public function with ``config`` (page_split: into ``self.dst`` as it is)."""
        p = self.paging
        if isinstance(self.problem.spec, ConvertIndicesSpec):
            return p.convert_indices(*self.args, **self.kw, config=config)
        if isinstance(self.problem.spec, PackValidPrefixSpec):
            return p.pack_valid_prefix(self.slots, self.indptr, out=self.out, config=config)
        return p.page_split(self.src, **self.kw, out=self.dst, config=config)

    def prepare(self) -> None:
        """Fill the output with what the reference started from (before a checked call)."""
        if isinstance(self.problem.spec, PackValidPrefixSpec):
            self.out.fill_(-7)
        elif isinstance(self.problem.spec, PageSplitSpec):
            self._poisoned()

    def written(self):
        """The output buffer a call writes into (what a replayed graph's calls leave there); None for
        convert_indices, which returns a new tensor per call (the eager checks cover it)."""
        if isinstance(self.problem.spec, ConvertIndicesSpec):
            return None
        return self.out if isinstance(self.problem.spec, PackValidPrefixSpec) else self.dst

    def check(self, got, when: str) -> None:
        """TrialFailed unless ``got`` (run's result) equals the reference."""
        torch = self.torch
        got = got if isinstance(got, tuple) else (got,)
        want = self.want if isinstance(self.want, tuple) else (self.want,)
        for i, (g, w) in enumerate(zip(got, want)):
            if g.shape != w.shape or not torch.equal(g, w):
                bad = (g != w).nonzero()[:1].tolist() if g.shape == w.shape else "shape"
                raise TrialFailed(f"{when}: output {i} differs from the reference (first at {bad})")

    def checked_run(self, config: PagingConfig, when: str) -> None:
        self.prepare()
        got = self.run(config)
        self.check(got, when)


# --------------------------------------------------------------------------- measuring

def median_per_call(run: Callable, inner: int, repeats: int) -> float:
    """us per call of ``run()``, which makes ``inner`` calls: ``repeats`` event-timed runs, the median / inner."""
    import torch
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / inner)
    return statistics.median(times)


def capture_graph(fn: Callable, inner: int, side=None):
    """A CUDA graph of ``inner`` back-to-back ``fn()`` calls, captured on the stream ``side`` (default a new one)
    after three warm-up calls there (compiles, and the per-stream state page_split keeps), replayed once."""
    import torch
    side = side or torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        for _ in range(inner):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def graph_time(fn: Callable, inner: int, repeats: int, after: Callable | None = None, side=None) -> float:
    """us per ``fn()`` call: replays of ``capture_graph(fn, inner, side)``, ``median_per_call``.
    ``after(replay)`` runs before the graph is dropped (a check of what a replay writes)."""
    graph = capture_graph(fn, inner, side)
    us = median_per_call(graph.replay, inner, repeats)
    if after is not None:
        after(graph.replay)
    return us


class PagingMeasurer:
    """``measure(problem, config) -> us``: checks then times one config on ``device`` (CUDA: in a CUDA graph;
    CPU, under the interpreter: the checks and the wall time of one call, for tests). Inputs are made once
    per problem."""

    def __init__(self, device="cuda", pool_gb: float = 2.0, max_blocks: int = 2048, repeats: int = 10, seed: int = 0):
        import torch
        self.device = torch.device(device)
        self.pool_bytes, self.max_blocks, self.repeats, self.seed = int(pool_gb * 1e9), max_blocks, repeats, seed
        self.tag = f"pool{self.pool_bytes}-blocks{max_blocks}-seed{seed}"  # (a resumed study measured the same inputs)
        self._inputs: dict = {}
        # one capture stream: page_split keeps its touched-page state per stream
        self.side = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None

    def inputs(self, problem: PagingProblem) -> Inputs:
        if problem not in self._inputs:
            self._inputs.clear()  # one problem's (up to ~3 x pool_gb) at a time
            import torch
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            self._inputs[problem] = Inputs(problem, self.device, self.pool_bytes, self.max_blocks, self.seed)
        return self._inputs[problem]

    def inner(self, problem: PagingProblem) -> int:
        """Calls per graph: ~1 ms of GPU time or more, so launch gaps and event resolution do not matter."""
        if isinstance(problem.spec, PageSplitSpec):
            return 2 if problem.path == "all" else (10 if problem.size >= 1 << 17 else 50)
        return 100

    def __call__(self, problem: PagingProblem, config: PagingConfig) -> float:
        inp = self.inputs(problem)
        inp.checked_run(config, "first call")  # (touched: the graph-only paths run eagerly once)
        if problem.path == "touched":
            inp.checked_run(config, "eager call")
        if self.device.type != "cuda":
            t0 = time.perf_counter()
            inp.run(config)
            return (time.perf_counter() - t0) * 1e6

        def check_replay(replay):
            inp.prepare()
            replay()
            import torch
            torch.cuda.synchronize()
            out = inp.written()
            if out is not None:
                inp.check(out, "CUDA-graph replay")
        try:
            return graph_time(lambda: inp.run(config), self.inner(problem), self.repeats, check_replay, self.side)
        finally:  # states a config with more marks replaced: no graph of them is left to replay
            inp.paging.release_retired_lists()

    def copy_us(self, problem: PagingProblem, rounds: int = 3) -> float | None:
        """page_split problems: torch's device-to-device copy_ of the bytes the call moves, timed the same way
        (the median of ``rounds`` graphs: one alone ran 1.1-1.4x slow in session 32's first tune)."""
        inp = self.inputs(problem)
        if inp.copy_bytes is None or self.device.type != "cuda":
            return None
        a, b = inp.src.view(-1)[:inp.copy_bytes], inp.dst.view(-1)[:inp.copy_bytes]
        return statistics.median(graph_time(lambda: b.copy_(a), self.inner(problem), self.repeats, side=self.side)
                                 for _ in range(rounds))


# --------------------------------------------------------------------------- studies

def study_name(problem: PagingProblem, gpu: str, workload: str = "") -> str:
    """GPU, entry key and bucket, the inputs' sizes (``PagingMeasurer.tag``) and the templates measured."""
    return f"{gpu}/{problem.key}/b{problem.size}/{workload}/{paging_template_hash()[:8]}"


def default_journal(gpu: str) -> Path:
    return cache_dir().parent / "tune" / f"{gpu}.paging.journal"


def _measured(study) -> int:
    """Configs a study measured (a time or a failure; not rejected ones, nor duplicates)."""
    return sum("time_us" in t.user_attrs or "fail" in t.user_attrs for t in study.get_trials(deepcopy=False))


def run_study(problem: PagingProblem, measure: Callable, *, storage, gpu: str, trials: int = 40, seed: int = 0,
              out=sys.stderr, incumbent: PagingConfig | None = None):
    """The study of ``problem`` in ``storage`` (resumed where it stopped), run until ``trials`` configs
    were measured or the space is exhausted; the default config is trial 0, ``incumbent`` (a table's config for
    the bucket: a re-tune, or a GPU seeded from its arch's reference part) trial 1, by its searched fields."""
    default = problem.default
    space = {k: v + [getattr(default, k)] * (getattr(default, k) not in v) for k, v in search_space(problem).items()}
    n_space = space_size(space)
    grid = n_space <= trials  # small spaces are searched exhaustively
    sampler = (optuna.samplers.GridSampler(space, seed=seed) if grid else
               optuna.samplers.TPESampler(multivariate=True, seed=seed, n_startup_trials=max(4, trials // 4)))
    study = optuna.create_study(study_name=study_name(problem, gpu, getattr(measure, "tag", "")), storage=storage,
                                sampler=sampler,
                                direction="minimize", load_if_exists=True)
    if not study.get_trials(deepcopy=False):
        study.enqueue_trial({k: getattr(default, k) for k in space}, user_attrs={"baseline": True})
        if incumbent is not None and all(getattr(incumbent, k) in v for k, v in space.items()):
            study.enqueue_trial({k: getattr(incumbent, k) for k in space}, user_attrs={"seed": True})
    budget = n_space if grid else trials

    def objective(trial):
        params = {k: trial.suggest_categorical(k, v) for k, v in space.items()}
        # the baseline: the default whole (lead_min_ids and all, as the arch has it)
        cfg = default if trial.user_attrs.get("baseline") else config_from_params(problem, params)
        try:
            cfg.check(problem.spec)
        except ValueError as e:
            trial.set_user_attr("rejected", str(e).split(": ", 1)[-1][:200])
            raise optuna.TrialPruned() from None
        trial.set_user_attr("config", cfg.to_dict())
        twin = next((t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                     if t.user_attrs.get("config") == cfg.to_dict() and "duplicate_of" not in t.user_attrs), None)
        if twin is not None:
            trial.set_user_attr("duplicate_of", twin.number)
            return twin.value
        try:
            us = measure(problem, cfg)
        except TrialFailed as e:
            trial.set_user_attr("fail", str(e)[:300])
            return math.inf
        except Exception as e:  # a crash fails the config, not the study
            trial.set_user_attr("fail", f"{type(e).__name__}: {e}"[:300])
            return math.inf
        trial.set_user_attr("time_us", us)
        return us

    def progress(study, trial):
        done = [t for t in study.get_trials(deepcopy=False) if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
        measured = _measured(study)
        a = trial.user_attrs
        cfg = PagingConfig.from_dict(a["config"]).label(default) if "config" in a else \
            " ".join(f"{k}={v}" for k, v in trial.params.items() if v != getattr(default, k))
        what = (a.get("rejected") or a.get("fail") or (f"= #{a['duplicate_of']}" if "duplicate_of" in a else None)
                or f"{trial.value:.2f} us")
        best = best_trial(study)
        if out is not None:
            print(f"[{problem.label}] #{trial.number} {cfg}: {what} | best "
                  f"{f'{best.value:.2f} us (#{best.number})' if best else '-'} | {measured}/{budget} measured"[:240],
                  file=out, flush=True)
        if measured >= budget or len(done) >= 4 * budget + n_space:
            study.stop()

    if _measured(study) < budget:
        study.optimize(objective, n_trials=4 * budget + n_space, callbacks=[progress],
                       catch=(), gc_after_trial=False)
    return study


def _ok(t) -> bool:
    return t.state == TrialState.COMPLETE and t.value is not None and math.isfinite(t.value) \
        and "duplicate_of" not in t.user_attrs


def best_trial(study):
    ok = [t for t in study.get_trials(deepcopy=False) if _ok(t)]
    return min(ok, key=lambda t: (t.value, t.number)) if ok else None


def trial_config(t) -> PagingConfig:
    return PagingConfig.from_dict(t.user_attrs["config"])


def finalize(study, problem: PagingProblem, measure: Callable, top: int = 3, repeats: int = 3,
             copy_us: float | None = None, workload: str = "") -> PagingEntry | None:
    """The entry of ``study``: its ``top`` fastest configs and the default measured ``repeats`` more times,
    interleaved; the best median wins (the default among them: an entry never loses to it by this measure;
    a config that fails one of them is out). None if no config was correct."""
    ok = sorted((t for t in study.get_trials(deepcopy=False) if _ok(t)), key=lambda t: (t.value, t.number))
    if not ok:
        return None
    default = problem.default
    cands = list(dict.fromkeys([default] + [trial_config(t) for t in ok[:top]]))
    times = {c: [] for c in cands}
    for _ in range(repeats):
        for c in cands:
            try:
                times[c].append(measure(problem, c))
            except Exception:  # wrong or crashed once: never shipped
                times[c].append(math.inf)
    # (a config wrong once is never shipped, whatever its other times)
    med = {c: math.inf if math.inf in v else statistics.median(v) for c, v in times.items()}
    best = min(cands, key=lambda c: (med[c], c != default))
    if not math.isfinite(med[best]):
        return None
    return PagingEntry(best, problem.size, round(med[best], 3),
                       round(med[default], 3) if math.isfinite(med[default]) else None,
                       None if copy_us is None else round(copy_us, 3), workload,
                       _measured(study), today())


def tune(problems, measure: PagingMeasurer, *, gpu: str, out_path: Path, storage=None, trials: int = 40,
         seed: int = 0, provenance: dict | None = None, out=sys.stderr,
         incumbents: dict | None = None) -> dict[str, dict[int, PagingEntry]]:
    """Tune ``problems``, writing each entry into ``out_path`` as it is found (a cut run keeps them);
    ``incumbents`` {(entry key, bucket): config} seeds each study after the default."""
    from .tune import open_storage
    storage = open_storage(storage or default_journal(gpu), gpu)
    prov = provenance or paging_provenance()
    done: dict[str, dict[int, PagingEntry]] = {}
    for i, problem in enumerate(problems):
        t0 = time.time()
        study = run_study(problem, measure, storage=storage, gpu=gpu, trials=trials, seed=seed, out=out,
                          incumbent=(incumbents or {}).get((problem.key, problem.size)))
        inp = measure.inputs(problem) if hasattr(measure, "inputs") else None
        copy = measure.copy_us(problem) if hasattr(measure, "copy_us") else None
        entry = finalize(study, problem, measure, copy_us=copy, workload=getattr(inp, "workload", ""))
        if entry is None:
            if out is not None:
                print(f"[{problem.label}] no correct config: nothing written", file=out, flush=True)
            continue
        done.setdefault(problem.key, {})[problem.size] = entry
        write_table(out_path, gpu, {problem.key: {problem.size: entry}}, prov)
        if out is not None:
            print(f"[{i + 1}/{len(problems)}] {problem.label}: {entry.config.label(problem.default)} "
                  f"{entry.time_us} us (default {entry.default_time_us} us"
                  f"{'' if copy is None else f', copy_ {copy:.2f} us'}; {time.time() - t0:.0f} s)", file=out, flush=True)
    return done


def report(entries: dict[str, dict[int, PagingEntry]]) -> str:
    """A Markdown table of tuned entries: time, the default's, and page_split's copy_ ceiling."""
    lines = ["| kernel path | bucket | workload | config (fields off the arch's default) | us | default us | "
             "default / tuned | copy_ us | of copy_ |", "|---|---|---|---|---|---|---|---|---|"]
    for key, buckets in sorted(entries.items()):
        default = default_config_for(*split_key(key))
        for b, e in sorted(buckets.items()):
            speed = f"{e.default_time_us / e.time_us:.2f}x" if e.default_time_us and e.time_us else ""
            of = f"{e.copy_us / e.time_us:.2f}" if e.copy_us and e.time_us else ""
            lines.append(f"| {key} | {b} | {e.workload} | {e.config.label(default)} | {e.time_us} | {e.default_time_us} | "
                         f"{speed} | {e.copy_us if e.copy_us is not None else ''} | {of} |")
    return "\n".join(lines)


def tune_paging_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="sparsemla tune-paging", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40, help="measured configs per study (spaces this small or "
                    "smaller are searched exhaustively)")
    ap.add_argument("--only", default=None, help="comma list of substrings: problems whose label has one")
    ap.add_argument("--pool-gb", type=float, default=2.0, help="page_split's source pool")
    ap.add_argument("--page-size", type=int, default=64, help="convert_indices' page size")
    ap.add_argument("--topk", type=int, default=2048, help="top-k length (convert_indices, pack_valid_prefix width)")
    ap.add_argument("--src-page-size", type=int, default=256, help="page_split's source page size")
    ap.add_argument("--dst-page-size", type=int, default=64, help="page_split's destination page size")
    ap.add_argument("--storage", default=None, help="RDB URL or journal file (default per GPU in the cache dir)")
    ap.add_argument("--ship", action="store_true", help="write into the package's tuned/ (to commit)")
    ap.add_argument("--out", default=None, help="tables root (default the user dir; see --ship)")
    ap.add_argument("--gpu", default=None, help="table folder name (default from the device)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("sparsemla tune-paging needs a CUDA GPU", file=sys.stderr)
        return 2
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    from sparsemla.runtime.api import device_arch
    dev = torch.device("cuda", 0)
    gpu = args.gpu or gpu_dirname(torch.cuda.get_device_name(dev))
    try:
        problems = shipped_problems(device_arch(dev), args.page_size, args.topk, args.src_page_size,
                                    args.dst_page_size)
    except ValueError as e:
        ap.error(str(e))
    if args.only:
        subs = args.only.split(",")
        problems = [p for p in problems if any(s in p.label for s in subs)]
    root = Path(args.out) if args.out else (package_dir() if args.ship else user_dir())
    path = root / gpu / "paging.json"
    prov = {**device_provenance(dev), **paging_provenance()}
    # seeds: the GPU's own table, else its stand-ins' (an H100 starts from the H200's winners); later ones win
    incumbents = {}
    for table_gpu in (*reversed(stand_in_gpus(gpu, device_arch(dev))), gpu):
        for key, buckets in load_tables(table_gpu).items():
            incumbents.update({(key, b): e.config for b, e in buckets.items()})
    entries = tune(problems, PagingMeasurer(dev, args.pool_gb), gpu=gpu, out_path=path, storage=args.storage,
                   trials=args.trials, seed=args.seed, provenance=prov, incumbents=incumbents)
    from sparsemla.runtime.dispatch import clear_cache
    clear_cache()
    print(f"{path}\n\n{report(entries)}")
    return 0


__all__ = ["PagingProblem", "PagingMeasurer", "TrialFailed", "shipped_problems", "search_space", "run_study",
           "finalize", "tune", "report", "tune_paging_main"]
