"""The Gluon kernel for sm90 (templates/sparse_mla_gluon.py.jinja): which specs it runs, and the
renderable unit that names its module.

It is one fixed tiling (64 heads, 64-row tiles, two stages, two warp-specialized warp groups: one
gathers and accumulates output columns 0-383, the other computes S, the softmax and columns
384-511), so its only tunable is the split count; ``Config(gluon=True)`` selects it.
Split-K partials are merged by the Triton module's combine kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from .spec import KernelSpec

# Config fields the Gluon kernel fixes: what a Config with gluon=True must hold.
FIXED = dict(block_h=64, block_n=64, num_warps=8, num_stages=2, index_prefetch=False, p_exchange=False,
             l2_prefetch=0)


def unsupported(spec: KernelSpec) -> str:
    """Why the Gluon kernel cannot run ``spec`` ("" if it can)."""
    if spec.arch != "sm90":
        return "it is built for sm90 (wgmma, 217 KB of shared memory)"
    if spec.kv_format != "auto" or spec.q_dtype != "bf16" or spec.compute_dtype != "bf16":
        return "it reads bf16 caches (kv_format 'auto') with bf16 q and compute"
    if spec.d_qk != 576 or spec.d_v != 512:
        return "it is laid out for d_qk 576 (512 + 64 rope) and d_v 512"
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
        return dict(kspec=self.spec)
