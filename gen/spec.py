"""The frozen kernel spec: every specialization axis of a generated sparse-MLA module.

``KernelSpec.key`` is the canonical string: it names the generated module, keys the
render cache and the tuned tables, and appears in every error about the spec.
``Config`` holds the tunables (tile sizes, splits, warps, stages); the arch decides which
values are allowed and which are the defaults.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

from .layout import FORMATS, format_layout


@dataclass(frozen=True)
class Arch:
    name: str
    cc: int  # compute capability as Triton's GPUTarget wants it (90, 120, 121)
    smem_bytes: int  # shared memory one block may use
    warps: tuple[int, ...]  # num_warps values worth trying
    max_stages: int
    num_sms: int  # SM count of the reference part, for default split choice


ARCHS = {
    # H100/H200: 227 KB opt-in shared memory per block. Without index_prefetch a 4th stage
    # compiles to the same buffers as the 3rd; with it, to one more gathered tile in flight.
    "sm90": Arch("sm90", 90, 232448, (4, 8), 4, 132),
    # RTX PRO 6000 / RTX 50xx (sm120) and GB10 (sm121): ~99 KB per block, no wgmma.
    "sm120": Arch("sm120", 120, 101376, (4, 8), 3, 188),
    "sm121": Arch("sm121", 121, 101376, (4, 8), 3, 48),
}

DTYPES = ("bf16", "fp16", "fp32")
FAMILIES = ("sparse_mla",)


def module_name_for(key: str) -> str:
    """The generated module's name for a spec key: a valid identifier, one per key."""
    return "sparsemla_gen_" + re.sub(r"[^0-9a-zA-Z]", "_", key)


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


@dataclass(frozen=True)
class KernelSpec:
    """What one generated module is specialized for (not how it is tiled)."""

    kv_format: str = "auto"
    d_qk: int = 576
    d_v: int = 512
    num_heads: int = 128
    topk: int = 2048
    page_size: int = 1
    arch: str = "sm90"
    q_dtype: str = "bf16"
    compute_dtype: str = "bf16"
    has_sink: bool = False
    extra_topk: int = 0  # 0: no extra cache; else the extra index list's width
    extra_page_size: int = 1
    return_lse: bool = False
    # Each program also writes its heads' largest scaled score (FlashMLA prefill's max_logits) by an atomic max
    # into the float beside each LSE: the runtime passes the LSE as the first column of a [T, H, 2] buffer.
    max_logits: bool = False
    family: str = "sparse_mla"

    def __post_init__(self):
        def bad(name, expected):
            raise ValueError(f"KernelSpec.{name}={getattr(self, name)!r}: expected {expected}")

        if self.family not in FAMILIES:
            bad("family", f"one of {FAMILIES}")
        if self.arch not in ARCHS:
            bad("arch", f"one of {tuple(ARCHS)}")
        if self.kv_format not in FORMATS:
            bad("kv_format", f"one of {FORMATS}")
        for name in ("q_dtype", "compute_dtype"):
            if getattr(self, name) not in DTYPES:
                bad(name, f"one of {DTYPES}")
        if self.kv_format == "auto" and self.q_dtype == "fp32" and self.compute_dtype != "fp32":
            bad("compute_dtype", "'fp32' when q and the auto cache are float32")
        for name, hi in (("num_heads", 1024), ("topk", 1 << 20)):
            v = getattr(self, name)
            if not isinstance(v, int) or not 1 <= v <= hi:
                bad(name, f"an int in 1..{hi}")
        for name in ("page_size", "extra_page_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 1 <= v <= 4096:
                bad(name, "an int in 1..4096")
        if not isinstance(self.extra_topk, int) or not 0 <= self.extra_topk <= 1 << 20:
            bad("extra_topk", "an int in 0..2**20 (0 = no extra cache)")
        if self.max_logits and (not self.return_lse or self.extra_topk):
            bad("max_logits", "False unless return_lse=True (its values sit beside the LSE's) and no extra cache")
        try:
            format_layout(self.kv_format, self.d_qk, self.d_v)
        except ValueError as e:
            raise ValueError(f"KernelSpec {self.key}: {e}") from None

    template = "sparse_mla.py.jinja"

    def template_context(self) -> dict:
        from .render import attention_context
        return attention_context(self)

    @property
    def layout(self):
        return format_layout(self.kv_format, self.d_qk, self.d_v)

    @property
    def key(self) -> str:
        parts = [self.family, self.arch, self.kv_format, f"qk{self.d_qk}", f"v{self.d_v}",
                 f"h{self.num_heads}", f"k{self.topk}", f"p{self.page_size}",
                 f"q{self.q_dtype}", f"c{self.compute_dtype}"]
        if self.has_sink:
            parts.append("sink")
        if self.extra_topk:
            parts.append(f"x{self.extra_topk}p{self.extra_page_size}")
        if self.return_lse:
            parts.append("lse")
        if self.max_logits:
            parts.append("ml")
        return "-".join(parts)

    @property
    def module_name(self) -> str:
        return module_name_for(self.key)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_key(cls, key: str) -> "KernelSpec":
        """Inverse of ``key``; ValueError names the part it cannot read."""
        parts = key.split("-")
        if len(parts) < 10:
            raise ValueError(f"spec key {key!r}: expected at least 10 '-'-separated parts")
        fam, arch, fmt, qk, v, h, k, p, qd, cd, *opt = parts
        try:
            kw = dict(family=fam, arch=arch, kv_format=fmt, d_qk=int(qk[2:]), d_v=int(v[1:]),
                      num_heads=int(h[1:]), topk=int(k[1:]), page_size=int(p[1:]),
                      q_dtype=qd[1:], compute_dtype=cd[1:])
            for o in opt:
                if o == "sink":
                    kw["has_sink"] = True
                elif o == "lse":
                    kw["return_lse"] = True
                elif o == "ml":
                    kw["max_logits"] = True
                elif o.startswith("x"):
                    xt, xp = o[1:].split("p")
                    kw["extra_topk"], kw["extra_page_size"] = int(xt), int(xp)
                else:
                    raise ValueError(f"unknown part {o!r}")
        except ValueError as e:
            raise ValueError(f"spec key {key!r}: {e}") from None
        return cls(**kw)


@dataclass(frozen=True)
class Config:
    """Tunables of one launch of a generated module."""

    block_h: int = 64  # heads per program: the MMA's M dimension
    block_n: int = 32  # gathered KV rows per tile
    num_splits: int = 1  # split-K over the top-k list (1: no combine pass)
    num_warps: int = 8
    num_stages: int = 2
    index_prefetch: bool = False  # load the next tile's slot ids a tile early (deeper KV pipelining)
    # Pass P through a scratch so 2 warp groups split S (see the template); the scratch takes
    # 2 x (BLOCK_H x BLOCK_N x 2 B + BLOCK_H x 4 B) per program and cache (17 KB at h64 n64).
    p_exchange: bool = False
    # Prefetch the gathered rows into L2 this many tiles ahead of their gather (0: off).
    l2_prefetch: int = 0
    # Run a Gluon kernel (templates/sparse_mla_gluon.py.jinja, sm90, bf16 compute): warp groups that
    # load and warp groups that compute; block_h 64 or 16/32 picks the tiling, fixed but for
    # num_splits (and num_warps 8/12 with 16/32 heads; gen/gluon.py FIXED).
    gluon: bool = False

    def check(self, spec: KernelSpec) -> "Config":
        """Raise ValueError if this config cannot run ``spec`` on its arch."""
        arch = ARCHS[spec.arch]

        def bad(name, expected):
            raise ValueError(f"Config.{name}={getattr(self, name)!r} for {spec.key}: expected {expected}")

        if not _pow2(self.block_h) or not 16 <= self.block_h <= 128:
            bad("block_h", "a power of two in 16..128")
        if not _pow2(self.block_n) or not 16 <= self.block_n <= 256:
            bad("block_n", "a power of two in 16..256")
        if not isinstance(self.num_splits, int) or not 1 <= self.num_splits <= 256:
            bad("num_splits", "an int in 1..256")
        if self.num_warps not in (1, 2, 4, 8, 16) and not (self.gluon and self.num_warps == 12):
            bad("num_warps", "one of 1, 2, 4, 8, 16 (or 12 with gluon=True)")
        if not 1 <= self.num_stages <= arch.max_stages:
            bad("num_stages", f"an int in 1..{arch.max_stages} on {arch.name}")
        for flag in ("index_prefetch", "p_exchange", "gluon"):
            if not isinstance(getattr(self, flag), bool):
                bad(flag, "True or False")
        if self.l2_prefetch not in (0, 1, 2, 4, 8):
            bad("l2_prefetch", "one of 0 (off), 1, 2, 4, 8 tiles ahead")
        if self.gluon:
            from .gluon import config_problem
            name, expected = config_problem(spec, self)
            if name:
                bad(name, expected)
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"Config: unknown fields {sorted(unknown)}; expected {sorted(names)}")
        return cls(**d)


def config_label(c) -> str:
    """A Config (or its dict, possibly partial) as people read it in logs and tables:
    "h64 n64 s2 w8 st2", with " pf" when index_prefetch is on, " px" for p_exchange,
    " l2p2" for l2_prefetch=2 and " gl" for the Gluon kernel."""
    d = c.to_dict() if isinstance(c, Config) else c
    return (f"h{d.get('block_h')} n{d.get('block_n')} s{d.get('num_splits')} w{d.get('num_warps')} "
            f"st{d.get('num_stages')}" + (" pf" if d.get("index_prefetch") else "")
            + (" px" if d.get("p_exchange") else "")
            + (f" l2p{d['l2_prefetch']}" if d.get("l2_prefetch") else "")
            + (" gl" if d.get("gluon") else ""))


def next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


@lru_cache(maxsize=4096)
def filling_splits(spec: KernelSpec, num_tokens: int, block_h: int, sms: int) -> int:
    """The split count (a power of two up to 64) at which programs of ``block_h`` heads make about two waves on
    ``sms`` SMs, with at least 64 slots of the top-k list a split."""
    programs = max(1, num_tokens) * -(-spec.num_heads // block_h)
    splits, total = 1, spec.topk + spec.extra_topk
    while programs * splits < 2 * sms and splits < 64 and total // (splits * 2) >= 64:
        splits *= 2
    return splits


def default_config(spec: KernelSpec, num_tokens: int, num_sms: int | None = None) -> Config:
    """The arch's untuned choice for ``num_tokens`` query tokens.

    Heads form the MMA's M dimension (up to 64 per program); when tokens x head blocks
    cannot fill the GPU, the top-k list is split so that about two waves of programs run.
    """
    arch = ARCHS[spec.arch]
    sms = num_sms or arch.num_sms
    small_smem = arch.smem_bytes < 150_000
    # ~99 KB of shared memory (sm120/sm121) holds a 32-head tile's q and fp8 KV stages, not 64,
    # and only 16 heads with 2-byte KV (compile-checked in tests/test_compile.py).
    cap = (16 if spec.kv_format == "auto" else 32) if small_smem else 64
    block_h = min(cap, max(16, next_pow2(spec.num_heads)))
    splits = filling_splits(spec, num_tokens, block_h, sms)
    # Measured on the H200 (benchmarks/results/sweep_*.json, session3/): a 64-row tile beats
    # 32 rows by 1.4x with 64 heads and 8 warps, and by 1.17-1.27x with 16 heads and 4 warps
    # (a third stage gains nothing without index_prefetch: the gathered tile is still issued
    # one tile ahead);
    # with <= 32 heads 4 warps beat 8 by 1.3x.
    block_n = 32 if small_smem else 64
    num_stages = 2
    num_warps = 8 if block_h >= 64 or (small_smem and block_h == 32) else 4
    # H200, session 7 (results/session7/sweep_l2.log): prefetching the rows 2 tiles ahead into
    # L2 is 7-12% faster with 64 heads in every format and up to 17% with 16 heads in FP8, about
    # even with 16 heads in bf16. Not measured on sm120/sm121: off there.
    l2_prefetch = 2 if spec.arch == "sm90" else 0
    return Config(block_h, block_n, splits, num_warps, num_stages, l2_prefetch=l2_prefetch).check(spec)
