"""The Gluon kernel for sm90 (templates/sparse_mla_gluon.py.jinja): which specs it runs, and the
renderable unit that names its module.

It is one fixed tiling (64 heads, 64-row tiles, two stages, warp-specialized warp groups: one
accumulates output columns 0-383, and with a bf16 cache gathers; one computes S, the softmax and
columns 384-511; with an fp8 cache a third dequantizes each tile into shared memory), so its only
tunable is the split count; ``Config(gluon=True)`` selects it. Split-K partials are merged by the
Triton module's combine kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from .render import cache_descs
from .spec import KernelSpec

# Config fields the Gluon kernel fixes: what a Config with gluon=True must hold (num_warps: the
# warps that compute; an fp8 cache's kernel has a dequantizing warp group besides).
FIXED = dict(block_h=64, block_n=64, num_warps=8, num_stages=2, index_prefetch=False, p_exchange=False,
             l2_prefetch=0)


def unsupported(spec: KernelSpec) -> str:
    """Why the Gluon kernel cannot run ``spec`` ("" if it can)."""
    if spec.arch != "sm90":
        return "it is built for sm90 (wgmma, 217 KB of shared memory)"
    if spec.q_dtype != "bf16" or spec.compute_dtype != "bf16":
        return "it computes in bf16 from bf16 q"
    if spec.d_v != 512 or spec.d_qk not in (512, 576):
        return "it is laid out for d_v 512 and d_qk 576 (512 + 64 rope) or 512"
    if spec.extra_topk:
        return "it has no extra cache"
    return ""


@dataclass(frozen=True)
class GluonKernel:
    """``spec``'s Gluon module, as gen.render renders and caches it."""

    spec: KernelSpec
    template = "sparse_mla_gluon.py.jinja"

    def __post_init__(self):
        why = unsupported(self.spec)
        if why:
            raise ValueError(f"no Gluon kernel for {self.spec.key}: {why}")

    @property
    def key(self) -> str:
        return self.spec.key + "-gluon"

    @property
    def module_name(self) -> str:
        return self.spec.module_name + "_gluon"

    def template_context(self) -> dict:
        return dict(kspec=self.spec, cache=cache_descs(self.spec)[0])
