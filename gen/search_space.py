"""The tuner's search space per spec and arch, and the compile-time constraint on it.

Every candidate is compiled for its target with ``compile_for_arch`` before any GPU time:
a config that does not build, needs more shared memory than the arch has, or spills more
than ``max_spill`` bytes is rejected with a reason. Compile results are cached per
(spec key, config, arch) in memory and in a small JSON file under the user cache dir, one
file per (template, renderer and compile-check code, Triton version), so a change there
never reuses a stale result.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path
from typing import Callable

from .gluon import unsupported
from .render import ATTENTION_TEMPLATES, atomic_write, cache_dir, template_source
from .spec import ARCHS, Config, KernelSpec, default_config, next_pow2

log = logging.getLogger("sparsemla")
# Config fields the tuner may search; a space holds those that can matter for its spec, and a
# field left out takes its Config default.
PARAMS = ("block_h", "block_n", "num_splits", "num_warps", "num_stages", "index_prefetch", "p_exchange",
          "l2_prefetch", "gluon")
ON_OFF = ("index_prefetch", "p_exchange", "l2_prefetch")  # two-valued fields: a feature off or on


def search_space(spec: KernelSpec, arch: str | None = None) -> dict[str, list[int]]:
    """Categorical choices per Config field, in Config field order.

    block_h stops at the first power of two covering the heads (a bigger M tile only adds
    padding; but where the Gluon kernel runs 17-32 heads, 64 is in the space for its 64-head
    programs, and ``static_reason`` keeps the Triton kernel from it), and at 64 when d_v > 128:
    a BLOCK_H x d_v fp32 accumulator must live in registers, and 64 x 512 already takes half of
    them. block_n stops at 128 (a 256-row tile of q's width does not fit shared memory with a
    second stage); num_splits stops where a split would get less than the smallest KV tile.
    num_warps is the arch's list (16 warps measured 2x slower on the H200 in every row: the
    accumulator spills). index_prefetch lets the KV gather run num_stages - 1 tiles ahead
    (compiled: 3 KV buffers at 3 stages, not 2).
    p_exchange is searched only where a 64-head tile with 8 warps is (it splits that tile's
    scores across the 2 warp groups; H200, session 6: 5-12% faster with split-K and for the
    FP8 formats at 1 split, 2-6% slower for bf16 at 1 split), so the spaces of H <= 32 stay
    as they were. l2_prefetch is off or 2 tiles ahead (H200, session 7: 2 beat 1 and 4 in every
    row measured; 1 was often slower than off). gluon (sm90, where the Gluon kernel runs the spec:
    gen/gluon.py) picks the warp-specialized kernel, whose tiling is fixed but for block_h, num_splits and,
    with 16 or 32 heads a program, num_stages and num_warps (12: two dequantizing warp groups, fp8 caches);
    the space's other combinations with it are rejected before compiling (``static_reason``). The arch's
    default config is always inside the space.
    """
    a = ARCHS[arch or spec.arch]
    total = spec.topk + spec.extra_topk
    max_h = 64 if spec.d_v > 128 else 128
    space = {
        "block_h": [b for b in (16, 32, 64, 128) if b <= min(max_h, max(16, next_pow2(spec.num_heads)))],
        "block_n": [b for b in (16, 32, 64, 128) if b <= max(16, next_pow2(total))],
        "num_splits": [s for s in (1, 2, 4, 8, 16, 32, 64) if s == 1 or total // s >= 16],
        "num_warps": list(a.warps),
        "num_stages": list(range(1, a.max_stages + 1)),
        "index_prefetch": [False, True],
        "l2_prefetch": [0, 2],
    }
    if 64 in space["block_h"] and 8 in space["num_warps"]:
        space["p_exchange"] = [False, True]
    # (not with an extra cache: its Gluon launch, correct on the H200 since session 27, takes the main list's tuned
    # entry by rule, triton_backend.extra_gluon, and the other such calls run as PartsLaunch, each cache with its
    # own entry; a Gluon entry for the combined spec would not be what a call runs by default)
    if a.name == "sm90" and not unsupported(replace(spec, arch=a.name)) and not spec.extra_topk:
        space["gluon"] = [False, True]
        if spec.kv_format != "auto" and min(space["block_h"]) < 64:
            space["num_warps"] = sorted(space["num_warps"] + [12])
        if max(space["block_h"]) == 32 and max_h >= 64:
            # The Gluon kernel's 64-head programs (heads as wgmma's M) also run 17-32 heads, the rest masked:
            # on the H200 they beat its narrow ones for 32-head fp8 caches at T <= 64 (sessions 12-13,
            # benchmarks/gluon_select.py), and a GPU's own run must be able to measure those table entries.
            space["block_h"] = sorted(space["block_h"] + [64])
    for T in (1, 4096):  # the default changes with T only through num_splits
        for k, v in default_config(replace(spec, arch=a.name), T).to_dict().items():
            if k in space and v not in space[k]:
                space[k] = sorted(space[k] + [v])
    return space


def restricted(space: dict, fields) -> dict:
    """``space`` searching only ``fields`` (None: all); without gluon, also without the values only the Gluon
    kernel takes (num_warps 12), so a study of the Triton kernel's fields keeps the space it had before."""
    if fields is None:
        return space
    out = {k: v for k, v in space.items() if k in fields}
    if "gluon" not in out and "num_warps" in out:
        out["num_warps"] = [w for w in out["num_warps"] if w != 12]
    return out


def space_size(space: dict) -> int:
    n = 1
    for v in space.values():
        n *= len(v)
    return n


def all_configs(space: dict) -> list[Config]:
    names = [p for p in PARAMS if p in space]
    return [Config(**dict(zip(names, vals))) for vals in itertools.product(*(space[p] for p in names))]


def static_reason(spec: KernelSpec, config: Config) -> str:
    """Why ``config`` cannot work for ``spec`` without compiling it ('' if it may)."""
    try:
        config.check(spec)
    except ValueError as e:
        return str(e)
    if not config.gluon and config.block_h > max(16, next_pow2(spec.num_heads)):
        return (f"block_h={config.block_h} for {spec.num_heads} heads: in the Triton kernel a tile beyond the "
                f"heads' power of two only adds padding (the Gluon kernel's 64-head programs are another tiling)")
    total = spec.topk + spec.extra_topk
    if config.num_splits > 1 and total // config.num_splits < config.block_n:
        return f"num_splits={config.num_splits} leaves fewer than block_n={config.block_n} slots per split"
    if config.p_exchange and (config.block_h < 64 or config.num_warps < 8):
        return (f"p_exchange with block_h={config.block_h}, num_warps={config.num_warps}: it splits a "
                f"64-head tile across 2 warp groups (block_h >= 64, num_warps >= 8); here it only adds traffic")
    return ""


def compiled_variant(config: Config) -> Config:
    """The config whose compiled kernel ``config`` runs: num_splits is a runtime argument, so
    every split count above 1 shares one kernel (SPLIT_K on) and its resources."""
    return replace(config, num_splits=min(config.num_splits, 2))


def _key(spec: KernelSpec, config: Config, arch: str) -> str:
    c = compiled_variant(config)
    return (f"{arch}|{spec.key}|{c.block_h},{c.block_n},{c.num_splits},{c.num_warps},{c.num_stages}"
            + (",pf" if c.index_prefetch else "") + (",px" if c.p_exchange else "")
            + (f",l2p{c.l2_prefetch}" if c.l2_prefetch else "") + (",gl" if c.gluon else ""))


def compile_cache_path() -> Path:
    """One file per (templates, code that renders and compiles them, Triton version)."""
    import hashlib
    import inspect

    import triton

    from . import compile_check, gluon, layout, render
    h = hashlib.sha256("\0".join(template_source(n) for n in ATTENTION_TEMPLATES).encode())
    for mod in (render, compile_check, layout, gluon):
        h.update(inspect.getsource(mod).encode())
    return cache_dir().parent / "compile" / f"{h.hexdigest()[:16]}-triton{triton.__version__}.json"


def _compiler_init():
    # Triton reads TRITON_INTERPRET while compiling too (constexpr functions such as tl.cdiv),
    # and a compile changes state the interpreter then trips on: compile in a process of its own.
    os.environ["TRITON_INTERPRET"] = "0"


def _compile_one(args) -> dict:  # top level: runs in the compile process
    from .compile_check import compile_for_arch
    return _as_dict(compile_for_arch(*args))


def _as_dict(r) -> dict:
    return dict(ok=r.ok, shared_bytes=r.shared_bytes, registers=r.registers,
                spill_bytes=r.spill_bytes, error=r.error[:500])


class CompileConstraint:
    """Accepts or rejects configs by their compile report; cached in memory and on disk.

    ``compile_fn(spec, config, arch) -> CompileReport`` is injectable (tests use a fake);
    by default ``compile_for_arch`` runs in spawned processes (a crash there rejects the
    config). ``path=None`` keeps the cache in memory only.
    """

    def __init__(self, max_spill: int = 0, compile_fn: Callable | None = None,
                 path: Path | str | None = "default", jobs: int = 1):
        self.max_spill, self.jobs = max_spill, jobs
        self._pool_lock = threading.Lock()
        self.compile_fn = compile_fn
        self.path = compile_cache_path() if path == "default" else (Path(path) if path else None)
        self._lock = threading.Lock()
        self._reports: dict[str, dict] = self._read()
        self._pool, self._pool_jobs = None, 0

    def _read(self) -> dict:
        if self.path is None or not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return data
        except (OSError, ValueError) as e:
            log.warning("sparsemla: compile cache %s is unusable (%s); starting a new one", self.path, e)
            return {}

    def _save(self) -> None:
        if self.path is None:
            return
        merged = {**self._read(), **self._reports}  # keep what other processes added meanwhile
        atomic_write(self.path, json.dumps(merged, sort_keys=True))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
        self._pool, self._pool_jobs = None, 0

    def _compile(self, items: list, jobs: int = 1) -> list[dict]:
        items = [(spec, compiled_variant(c), arch) for spec, c, arch in items]
        if self.compile_fn is not None:
            return [_as_dict(self.compile_fn(*it)) for it in items]
        with self._pool_lock:  # tuner threads share one pool, sized for the most parallel caller
            jobs = max(jobs, self.jobs)
            if self._pool is None or self._pool_jobs < jobs:
                self.close()
                self._pool = ProcessPoolExecutor(jobs, mp_context=get_context("spawn"),
                                                 initializer=_compiler_init)
                self._pool_jobs = jobs
            pool = self._pool
        futures = [pool.submit(_compile_one, it) for it in items]
        out = []
        for f in futures:
            try:
                out.append(f.result())
            except BrokenProcessPool as e:  # the compiler died: reject, and start afresh next time
                out.append(dict(ok=False, shared_bytes=0, registers=-1, spill_bytes=0,
                                error=f"compiler process died: {e}"))
        if any(not r["ok"] and r["error"].startswith("compiler process died") for r in out):
            self.close()
        return out

    def report(self, spec: KernelSpec, config: Config, arch: str | None = None) -> dict:
        arch = arch or spec.arch
        key = _key(spec, config, arch)
        with self._lock:
            hit = self._reports.get(key)
        if hit is not None:
            return hit
        rep = self._compile([(spec, config, arch)])[0]
        with self._lock:
            self._reports[key] = rep
            self._save()
        return rep

    def precompile(self, spec: KernelSpec, configs, arch: str | None = None, jobs: int = 1) -> None:
        """Fill the cache for ``configs``, ``jobs`` compiles at a time."""
        arch = arch or spec.arch
        todo = list({_key(spec, c, arch): c for c in configs
                     if not static_reason(spec, c) and _key(spec, c, arch) not in self._reports}.values())
        if not todo:
            return
        reps = self._compile([(spec, c, arch) for c in todo], jobs)
        with self._lock:
            for c, rep in zip(todo, reps):
                self._reports[_key(spec, c, arch)] = rep
            self._save()

    def reason(self, spec: KernelSpec, config: Config, arch: str | None = None,
               max_spill: int | None = None) -> str:
        """'' if ``config`` may run ``spec`` on ``arch``, else why not."""
        arch = arch or spec.arch
        why = static_reason(spec, config)
        if why:
            return why
        rep = self.report(spec, config, arch)
        limit = ARCHS[arch].smem_bytes
        max_spill = self.max_spill if max_spill is None else max_spill
        if not rep["ok"]:
            return f"compile failed: {rep['error'].splitlines()[0] if rep['error'] else '?'}"
        if rep["shared_bytes"] > limit:
            return f"shared memory {rep['shared_bytes']} B > {limit} B on {arch}"
        # registers == -1: ptxas gave no resource report, so spills are unknown (not rejected).
        if rep["spill_bytes"] > max_spill:
            return f"spills {rep['spill_bytes']} B > max_spill {max_spill} B ({rep['registers']} registers)"
        return ""

