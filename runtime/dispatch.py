"""Choose the launch config for a spec and a number of query tokens.

The tuned table of the device's GPU (``sparsemla.gen.tuned_table``) is read once per
process; a spec or GPU without an entry falls back to the arch's ``default_config``. Where a spec
has no entry of its own, a stand-in's is used (``stand_ins``): the tables are tuned on plain calls
with the suite's head counts and page sizes, and a sink or LSE output changes only the epilogue, a
head count between two tuned ones the masked rows of the same head blocks, the page size only the
gathered rows' addresses.
On the CPU (Triton's interpreter) the GPU name comes from ``$SPARSEMLA_GPU``, if set.
"""
from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache

import torch

from sparsemla.gen.spec import Config, KernelSpec, default_config, next_pow2
from sparsemla.gen.tuned_table import TunedEntry, bucket_for, gpu_dirname, load_tables


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
def _table(gpu: str, family: str) -> dict[str, tuple[tuple[int, ...], dict[int, TunedEntry]]]:
    return {key: (tuple(sorted(b)), b) for key, b in load_tables(gpu, family).items()}


@lru_cache(maxsize=None)
def _page_sizes(gpu: str, family: str) -> tuple[int, ...]:
    """The page sizes the table's specs were tuned with."""
    return tuple(sorted({KernelSpec.from_key(k).page_size for k in _table(gpu, family)}))


def stand_ins(spec: KernelSpec, page_sizes=()):
    """``spec``, then the specs whose tuned entry it may use, best first: the same call without a
    sink or LSE output at its page size, then at each of ``page_sizes``; then these at the powers of
    two above its head count up to 256 (e.g. 8 heads, a 128-head model on 16 GPUs, run 16 heads'
    entry; its tiles mask the rows of the missing heads)."""
    yield spec
    h = spec.num_heads
    while h <= 256:
        for page in (spec.page_size, *(p for p in page_sizes if p != spec.page_size)):
            cand = replace(spec, has_sink=False, return_lse=False, num_heads=h, page_size=page)
            if cand != spec:
                yield cand
        h = next_pow2(h + 1)


@lru_cache(maxsize=4096)
def lookup(spec: KernelSpec, num_tokens: int, device: torch.device) -> TunedEntry | None:
    """The tuned entry for ``spec`` (or its first stand-in that has one) at ``num_tokens`` on
    ``device``'s GPU, or None."""
    gpu = _gpu(device)
    if gpu is None:
        return None
    table = _table(gpu, spec.family)
    hit = next((table[s.key] for s in stand_ins(spec, _page_sizes(gpu, spec.family)) if s.key in table), None)
    if hit is None:
        return None
    buckets, entries = hit
    return entries[bucket_for(num_tokens, buckets)]


def select_config(spec: KernelSpec, num_tokens: int, device: torch.device) -> Config:
    entry = lookup(spec, num_tokens, device)
    if entry is not None:
        try:
            return entry.config.check(spec)  # (a stand-in's entry was checked for the stand-in)
        except ValueError:
            pass
    return default_config(spec, num_tokens, _num_sms(device))


def clear_cache() -> None:
    """Forget GPU names and tables read so far (after writing a table, or in tests)."""
    for f in (_gpu, _table, _page_sizes, lookup):
        f.cache_clear()
    from .api import clear_call_cache  # sparse_mla keeps the configs it chose per call signature
    clear_call_cache()
