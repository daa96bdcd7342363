"""The benchmark suite of ../shared/anchors.md as specs and token buckets, shared by
``sparsemla bench`` and ``sparsemla tune``.

Decode: T in {1, 4, 16, 64, 128, 256} x H in {16, 32, 64, 128}; prefill: T = 4096 x H in
{64, 128}; top-k 2048 slots drawn from a pool of 262,144; six KV formats (below).
"""
from __future__ import annotations

import argparse

from .spec import KernelSpec

TOPK = 2048
SLOTS = 262_144  # the KV pool the top-k slots are drawn from
DECODE_T = (1, 4, 16, 64, 128, 256)
HEADS = (16, 32, 64, 128)
PREFILL_T = 4096
PREFILL_H = (64, 128)

# row label -> (kv_format, d_qk, page_size)
SUITE_FORMATS = {
    "bf16": ("auto", 576, 1),
    "bf16_nope": ("auto", 512, 1),
    "fp8": ("fp8_e4m3", 576, 1),
    "fp8_nope": ("fp8_e4m3", 512, 1),
    "fp8_ds_mla": ("fp8_ds_mla", 576, 64),
    "model1": ("model1", 512, 64),
}


def suite_spec(fmt: str, num_heads: int, arch: str) -> KernelSpec:
    if fmt not in SUITE_FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {tuple(SUITE_FORMATS)}")
    kv_format, d_qk, page = SUITE_FORMATS[fmt]
    return KernelSpec(kv_format=kv_format, d_qk=d_qk, d_v=512, num_heads=num_heads, topk=TOPK,
                      page_size=page, arch=arch)


def suite_specs(arch: str, formats=None, heads=None, tokens=None,
                prefill: bool = True) -> list[tuple[KernelSpec, tuple[int, ...]]]:
    """(spec, token buckets) for every suite row on ``arch``, optionally restricted; ``tokens``
    may also name buckets outside the suite's (issue 7's T = 32 row; any power of two up to 4096)."""
    if tokens is not None and any(t < 1 or t & (t - 1) or t > PREFILL_T for t in tokens):
        raise ValueError(f"tokens={tokens}: expected powers of two in 1..{PREFILL_T} (the tuned buckets)")
    out = []
    for fmt in formats or SUITE_FORMATS:
        for H in heads or HEADS:
            ts = sorted(t for t in (DECODE_T if tokens is None else tokens) if t != PREFILL_T)
            if prefill and H in PREFILL_H and (tokens is None or PREFILL_T in tokens):
                ts.append(PREFILL_T)
            if ts:
                out.append((suite_spec(fmt, H, arch), tuple(ts)))
    return out


def format_list(text: str) -> list[str]:
    """argparse type of --formats: a comma list of the suite's format labels."""
    names = text.split(",")
    bad = [n for n in names if n not in SUITE_FORMATS]
    if bad:
        raise argparse.ArgumentTypeError(f"{','.join(bad)}: expected a comma list of {','.join(SUITE_FORMATS)}")
    return names


def positive_int_list(text: str) -> list[int]:
    """argparse type of --tokens / --heads: a comma list of positive ints."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a comma list of positive ints")
    return values
