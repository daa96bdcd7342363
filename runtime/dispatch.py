"""Choose the launch config for a spec and a number of query tokens.

The tuned table of the device's GPU (``sparsemla.gen.tuned_table``) is read once per
process; a spec or GPU without an entry falls back to the arch's ``default_config``. Where a spec
has no entry of its own, a stand-in's is used (``stand_ins``): the tables are tuned on plain calls
with the suite's head counts, and a sink or LSE output changes only the epilogue, a head count
between two tuned ones the masked rows of the same head blocks.
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


def stand_ins(spec: KernelSpec):
    """``spec``, then the specs whose tuned entry it may use, best first: the same call without a
    sink or LSE output, then that at the powers of two above its head count up to 256 (e.g. 8 heads,
    a 128-head model on 16 GPUs, run 16 heads' entry; its tiles mask the rows of the missing heads)."""
    yield spec
    plain = replace(spec, has_sink=False, return_lse=False)
    if plain != spec:
        yield plain
    h = next_pow2(spec.num_heads)
    h = h if h != spec.num_heads else 2 * h
    while h <= 256:
        yield replace(plain, num_heads=h)
        h *= 2


@lru_cache(maxsize=4096)
def lookup(spec: KernelSpec, num_tokens: int, device: torch.device) -> TunedEntry | None:
    """The tuned entry for ``spec`` (or its first stand-in that has one) at ``num_tokens`` on
    ``device``'s GPU, or None."""
    gpu = _gpu(device)
    if gpu is None:
        return None
    table = _table(gpu, spec.family)
    hit = next((table[s.key] for s in stand_ins(spec) if s.key in table), None)
    if hit is None:
        return None
    buckets, entries = hit
    return entries[bucket_for(num_tokens, buckets)]


def select_config(spec: KernelSpec, num_tokens: int, device: torch.device) -> Config:
    entry = lookup(spec, num_tokens, device)
    return entry.config if entry is not None else default_config(spec, num_tokens, _num_sms(device))


def clear_cache() -> None:
    """Forget GPU names and tables read so far (after writing a table, or in tests)."""
    for f in (_gpu, _table, lookup):
        f.cache_clear()
    from .api import clear_call_cache  # sparse_mla keeps the configs it chose per call signature
    clear_call_cache()
