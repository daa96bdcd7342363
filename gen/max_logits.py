"""The spec and config of the sparse max-logits kernel: FlashMLA's prefill also returns, per token and head, the
largest scaled score ``sm_scale * q . kv[idx]`` over the valid entries of the token's list (-inf if none).

It is the attention's score pass without the softmax or P.V: heads are the MMA's M, gathered rows its N, and the
score dim is unrolled in power-of-two segments (576 = 512 + 64). ``MaxLogitsSpec.key`` names the generated module
and appears in every error; ``MaxLogitsConfig`` holds its tiling, ``default_config`` the arch's choice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .spec import ARCHS, DTYPES, module_name_for, next_pow2

_BLOCK_H = (16, 32, 64)
_BLOCK_N = (16, 32, 64)


def _bad(obj, name, expected):
    raise ValueError(f"{type(obj).__name__}.{name}={getattr(obj, name)!r}: expected {expected}")


@dataclass(frozen=True)
class MaxLogitsSpec:
    """What one generated max-logits module is specialized for."""

    d_qk: int = 576
    compute_dtype: str = "bf16"  # q and the rows are cast to it before the dot (fp32 accumulation)
    arch: str = "sm90"

    template = "sparse_max_logits.py.jinja"

    def __post_init__(self):
        if not isinstance(self.d_qk, int) or isinstance(self.d_qk, bool) or not (16 <= self.d_qk <= 1024
                                                                                 and self.d_qk % 16 == 0):
            _bad(self, "d_qk", "a multiple of 16 in 16..1024")
        if self.compute_dtype not in DTYPES:
            _bad(self, "compute_dtype", f"one of {DTYPES}")
        if self.arch not in ARCHS:
            _bad(self, "arch", f"one of {tuple(ARCHS)}")

    @property
    def key(self) -> str:
        return f"max_logits-{self.arch}-qk{self.d_qk}-c{self.compute_dtype}"

    @classmethod
    def from_key(cls, key: str) -> "MaxLogitsSpec":
        """Inverse of ``key``; ValueError names the key and the expected form."""
        m = re.fullmatch(r"max_logits-(\w+)-qk(\d+)-c(\w+)", str(key))
        spec = cls(int(m.group(2)), m.group(3), m.group(1)) if m else None
        if spec is None or spec.key != key:
            raise ValueError(f"max_logits spec key {key!r}: expected max_logits-<arch>-qk<d_qk>-c<compute dtype>")
        return spec

    @property
    def module_name(self) -> str:
        return module_name_for(self.key)

    @property
    def segments(self) -> list[tuple[int, int]]:
        """(first column, width) of the score dim's power-of-two pieces, widest first: 576 -> (0, 512), (512, 64)."""
        segs, col = [], 0
        for bit in reversed(range(self.d_qk.bit_length())):
            if self.d_qk >> bit & 1:
                segs.append((col, 1 << bit))
                col += 1 << bit
        return segs

    def template_context(self) -> dict:
        cdt = {"bf16": "tl.bfloat16", "fp16": "tl.float16", "fp32": "tl.float32"}[self.compute_dtype]
        return dict(segs=self.segments, cdt=cdt, ieee=self.compute_dtype == "fp32")

    def default_config(self, num_heads: int) -> "MaxLogitsConfig":
        """sm90: up to 64 heads a program, 32 rows a step; 64-head programs in 8 warps and 3 stages (d_qk 576: 107 KB
        of shared memory, 255 registers, no spill with Triton 3.6, 32 B with 3.9; 2 stages spilled 296 B with 3.6);
        sm120/121 (~99 KB a block): up to 32 heads and 16 rows (39 KB). Chosen by the build report alone: not yet
        timed on a GPU. float32 compute (float32 q: FMA dots, not the tensor cores), every arch: 16 heads and 16 rows
        (74 KB, no spill; 64 heads spilled 20 KB and 32 overflowed sm120)."""
        if self.compute_dtype == "fp32":
            return MaxLogitsConfig(16, 16, 4, 2)
        wide = self.arch == "sm90"
        block_h = min(64 if wide else 32, max(16, next_pow2(num_heads)))
        if block_h == 64:
            return MaxLogitsConfig(64, 32, 8, 3)
        return MaxLogitsConfig(block_h, 32 if wide else 16, 4, 2)


@dataclass(frozen=True)
class MaxLogitsConfig:
    """Heads a program (``block_h``), gathered rows a loop step (``block_n``), warps and pipeline stages."""

    block_h: int = 64
    block_n: int = 32
    num_warps: int = 8
    num_stages: int = 2

    def __post_init__(self):
        for name, allowed in (("block_h", _BLOCK_H), ("block_n", _BLOCK_N), ("num_warps", (4, 8)),
                              ("num_stages", (1, 2, 3, 4))):
            if getattr(self, name) not in allowed or isinstance(getattr(self, name), bool):
                _bad(self, name, f"one of {allowed}")


_PTR = {"bf16": "*bf16", "fp16": "*fp16", "fp32": "*fp32"}


def compile_max_logits(spec: MaxLogitsSpec, config: MaxLogitsConfig, q_dtype: str = "bf16", has_len: bool = True):
    """Compile the kernel of ``spec`` with ``config`` for its arch without a GPU (q and the rows of ``q_dtype``);
    returns Triton's compiled kernel (``metadata.shared``: shared bytes; ``asm``). Raises RuntimeError naming the
    spec and config. Call it in a process that did not import triton under TRITON_INTERPRET=1."""
    from .compile_check import compile_jit
    from .render import load_compilable_module

    fn = load_compilable_module(spec).sparse_max_logits_kernel
    constexprs = dict(HAS_LEN=has_len, BLOCK_H=config.block_h, BLOCK_N=config.block_n, NUM_STAGES=config.num_stages)
    types = dict(q=_PTR[q_dtype], kv=_PTR[q_dtype], indices="*i32", topk_length="*i32", out="*fp32",
                 sm_scale="fp32")
    try:
        return compile_jit(fn, types, constexprs, spec.arch, config.num_warps)
    except Exception as e:
        raise RuntimeError(f"{spec.key} with {config} does not compile for {spec.arch}: {type(e).__name__}: {e}") from e
