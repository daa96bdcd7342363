"""Choose the launch config for a spec and a number of query tokens.

The tuned table of the device's GPU (``sparsemla.gen.tuned_table``) is read once per
process. Where a spec has no entry of its own, a stand-in's is used (``stand_ins``): the tables are
tuned on plain calls with the suite's head counts, page sizes and top-k length (2048), and a sink or
LSE output changes only the epilogue, a head count between two tuned ones the masked rows of the same
head blocks, the page size only the gathered rows' addresses, the top-k length only how many tiles
the programs walk. A GPU whose own table has no such entry runs its stand-in parts' (``table_gpus``: a
sibling part's, then the arch's reference part's: an H800 the H100's, then the H200's; an H20 the H200's; only for
the compute capability that arch names, reported once; ``SPARSEMLA_REFERENCE_TABLE=0`` turns that off); with none
of these, the arch's ``default_config``.
On the CPU (Triton's interpreter) the GPU name comes from ``$SPARSEMLA_GPU``, if set.
"""
from __future__ import annotations

import math
import os
from dataclasses import replace
from functools import lru_cache

import torch

from sparsemla.gen.spec import ARCHS, Config, KernelSpec, default_config, next_pow2
from sparsemla.gen.tuned_table import (TunedEntry, bucket_for, gpu_dirname, load_tables, log, stand_in_gpus,
                                       stand_in_role)

_REFERENCE = os.environ.get("SPARSEMLA_REFERENCE_TABLE", "1") != "0"


@lru_cache(maxsize=None)
def _num_sms(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).multi_processor_count


@lru_cache(maxsize=None)
def _gpu(device: torch.device) -> str | None:
    if device.type == "cuda":
        return gpu_dirname(torch.cuda.get_device_name(device))
    name = os.environ.get("SPARSEMLA_GPU")
    return gpu_dirname(name) if name else None


@lru_cache(maxsize=None)
def table_gpus(device: torch.device, arch: str) -> tuple[str, ...]:
    """The GPUs whose tables ``device`` runs for specs of ``arch``, best first: its own, then its stand-ins
    (``tuned_table.stand_in_gpus``: a sibling part's, the arch's reference part's) where ``device`` has that arch's
    compute capability (an arch stands in for other parts too: device_arch gives sm120 to a cc 8.0 or 10.0 GPU,
    whose kernels are not the reference part's)."""
    gpu = _gpu(device)
    if gpu is None:
        return ()
    if not _REFERENCE:
        return (gpu,)
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if major * 10 + minor != ARCHS[arch].cc:
            return (gpu,)
    return gpu, *stand_in_gpus(gpu, arch)


_reported_references: set = set()


def report_reference(gpu: str, ref: str, spec, command: str = "sparsemla tune") -> None:
    """Say once per (GPU, stand-in part, tuner) that ``gpu`` runs ``ref``'s tuned configs."""
    if (gpu, ref, command) not in _reported_references:
        _reported_references.add((gpu, ref, command))
        log.warning("sparsemla: %s has no tuned entry for %s: running the tuned configs of %s (%s) wherever %s "
                    "has none (reported once); `%s` tunes this GPU", gpu, spec.key, ref,
                    stand_in_role(gpu, ref, spec.arch), gpu, command)


@lru_cache(maxsize=None)
def _table(gpu: str, family: str) -> dict[str, tuple[tuple[int, ...], dict[int, TunedEntry]]]:
    return {key: (tuple(sorted(b)), b) for key, b in load_tables(gpu, family).items()}


@lru_cache(maxsize=None)
def _tuned_shapes(gpu: str, family: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The page sizes and top-k lengths the table's specs were tuned with."""
    specs = [KernelSpec.from_key(k) for k in _table(gpu, family)]
    return tuple(sorted({s.page_size for s in specs})), tuple(sorted({s.topk for s in specs}))


def stand_ins(spec: KernelSpec, page_sizes=(), topks=()):
    """``spec``, then the specs whose tuned entry it may use, best first: the same call without a
    sink or LSE output at its page size, then at each of ``page_sizes``; then these at the powers of
    two above its head count up to 256 (e.g. 8 heads, a 128-head model on 16 GPUs, run 16 heads'
    entry; its tiles mask the rows of the missing heads); then all of these at each of ``topks``, the
    nearest (in ratio) first (a top-k list of another length runs the same tiles, more or fewer of
    them; ``select_config`` trims a split count the shorter list cannot fill)."""
    yield spec
    near = sorted((k for k in topks if k != spec.topk), key=lambda k: (abs(math.log2(k / spec.topk)), k))
    for topk in (spec.topk, *near):
        h = spec.num_heads
        while h <= 256:
            for page in (spec.page_size, *(p for p in page_sizes if p != spec.page_size)):
                cand = replace(spec, has_sink=False, return_lse=False, max_logits=False, num_heads=h, page_size=page,
                               topk=topk)
                if cand != spec:
                    yield cand
            h = next_pow2(h + 1)


@lru_cache(maxsize=4096)
def lookup(spec: KernelSpec, num_tokens: int, device: torch.device) -> TunedEntry | None:
    """The tuned entry for ``spec`` (or its first stand-in that has one) at ``num_tokens`` on
    ``device``'s GPU, or None."""
    gpus = table_gpus(device, spec.arch)
    for gpu in gpus:
        table = _table(gpu, spec.family)
        hit = next((table[s.key] for s in stand_ins(spec, *_tuned_shapes(gpu, spec.family)) if s.key in table), None)
        if hit is not None:
            if gpu != gpus[0]:
                report_reference(gpus[0], gpu, spec)
            buckets, entries = hit
            return entries[bucket_for(num_tokens, buckets)]
    return None


def untuned_config(spec: KernelSpec, num_tokens: int, device: torch.device) -> Config:
    """The arch's default config for ``device`` (its SM count), what runs where no table entry does."""
    return default_config(spec, num_tokens, _num_sms(device))


def select_config(spec: KernelSpec, num_tokens: int, device: torch.device) -> Config:
    """The tuned entry's config (a stand-in's with its split count halved until every split of ``spec``'s
    list holds a tile), else the arch's default."""
    entry = lookup(spec, num_tokens, device)
    if entry is not None:
        cfg, total = entry.config, spec.topk + spec.extra_topk
        while cfg.num_splits > 1 and total // cfg.num_splits < cfg.block_n:
            cfg = replace(cfg, num_splits=cfg.num_splits // 2)
        try:
            return cfg.check(spec)  # (a stand-in's entry was checked for the stand-in)
        except ValueError:
            pass
    return untuned_config(spec, num_tokens, device)


def clear_cache() -> None:
    """Forget GPU names and tables read so far (after writing a table, or in tests)."""
    for f in (_gpu, table_gpus, _table, _tuned_shapes, lookup):
        f.cache_clear()
    from .api import clear_call_cache  # sparse_mla keeps the configs it chose per call signature
    from .paging import clear_tuned_cache
    clear_call_cache()
    clear_tuned_cache()
