"""The Gluon kernels for sm90 (templates/sparse_mla_gluon.py.jinja): which specs and configs they run,
and the renderable unit that names a module.

Two tilings, each fixed but for the split count, chosen by ``Config.block_h`` with ``gluon=True``:
- 64 (wide): 64 heads are wgmma's M; warp-specialized warp groups: one accumulates output columns
  0-383 (and with a bf16 cache gathers), one computes S, the softmax and columns 384-511, and with an
  fp8 cache a third dequantizes each tile into shared memory.
- 16 or 32 (narrow, session 14): for TP-sharded heads the 64 keys of a tile are wgmma's M and the
  heads its N (S^T = K Q^T, O^T = V^T P^T), so no MMA row is padding; one warp group computes, one
  gathers (bf16, cp.async) or dequantizes (fp8), or two dequantize alternate tiles
  (``num_warps=12``). With ``num_stages=1`` (session 16) a program has one stage and at most 128
  registers per thread, so two programs share an SM and each one's waits hide under the other's work.
Split-K partials are merged by the Triton module's combine kernel, or (the kernel's FUSED constexpr, chosen
at launch by runtime/triton_backend._fused) by the last split of each token and head block to finish, which
finds its counters SYNC_FLOATS floats before the partials.
"""
from __future__ import annotations

from dataclasses import dataclass

from .render import cache_descs
from .spec import KernelSpec

# Config fields a Config with gluon=True must hold, by block_h; num_warps: the wide kernel's
# computing warps (an fp8 cache's kernel has a dequantizing warp group besides), the narrow kernel's
# warps in all (4 compute, 4 or 8 load).
_COMMON = dict(block_n=64, num_stages=2, index_prefetch=False, p_exchange=False, l2_prefetch=0)
_NARROW = dict(_COMMON, num_warps=(8, 12), num_stages=(2, 1))
FIXED = {64: dict(_COMMON, num_warps=(8,)), 32: _NARROW, 16: _NARROW}
# float32 counters before the split-K partials in the runtime's workspace (4 per token and head block of a
# FUSED launch: up to 8192 of them), zeroed once; every FUSED launch leaves them 0.
SYNC_FLOATS = 1 << 15


def unsupported(spec: KernelSpec) -> str:
    """Why the Gluon kernels cannot run ``spec`` ("" if they can)."""
    if spec.arch != "sm90":
        return "it is built for sm90 (wgmma, 217 KB of shared memory)"
    if spec.q_dtype != "bf16" or spec.compute_dtype != "bf16":
        return "it computes in bf16 from bf16 q"
    if spec.d_v != 512 or spec.d_qk not in (512, 576):
        return "it is laid out for d_v 512 and d_qk 576 (512 + 64 rope) or 512"
    if spec.extra_topk and spec.extra_page_size != spec.page_size:
        return (f"its programs walk the extra cache's list with the main cache's page layout: the extra cache's "
                f"page size ({spec.extra_page_size}) must be the main one's ({spec.page_size})")
    return ""


def config_problem(spec: KernelSpec, config) -> tuple[str, str]:
    """(field, what it must be) for a gluon config that cannot run ``spec``; ("", "") if it can."""
    why = unsupported(spec)
    if why:
        return "gluon", f"False: the Gluon kernel cannot run this spec ({why})"
    if config.block_h not in FIXED:
        return "block_h", f"one of {sorted(FIXED)} with gluon=True (64: heads as wgmma's M; 16, 32: as its N)"
    for name, value in FIXED[config.block_h].items():
        allowed = value if isinstance(value, tuple) else (value,)
        if getattr(config, name) not in allowed:
            return name, (f"{allowed[0]!r}" if len(allowed) == 1 else f"one of {allowed}") + \
                f" with gluon=True and block_h={config.block_h} (the Gluon kernel's fixed tiling)"
    if config_loaders(config) == 2 and spec.kv_format == "auto":
        return "num_warps", ("8 with a bf16 cache (two dequantizing warp groups are for fp8 caches; two gathering "
                             "ones were measured slower in session 37)")
    why = _tiling_problem(config.block_h, config_loaders(config), config.num_stages)
    if why:  # (FIXED holds the wide kernel to its tiling, so only the stage rule is left)
        return "num_stages", f"2 unless {why}"
    return "", ""


def config_loaders(config) -> int:
    """Loading (dequantizing) warp groups a program of a Gluon ``config`` has: 2 with ``num_warps=12``, else 1."""
    return 2 if config.num_warps == 12 else 1


def _tiling_problem(block_h: int, loaders: int, stages: int) -> str:
    """What a tiling (heads per program, loading warp groups, stages) lacks ("" if the template has it)."""
    if block_h not in FIXED or loaders not in (1, 2) or stages not in (1, 2):
        return "block_h 16, 32 or 64, loaders 1 or 2, stages 1 or 2"
    if block_h == 64 and (loaders, stages) != (1, 2):
        return "block_h 64 has one loading warp group and two stages"
    if stages == 1 and (loaders, block_h) != (1, 16):
        return ("block_h=16 and one loading warp group, num_warps=8 (two programs per SM leave registers "
                "for one, and shared memory for 16 heads' Q)")
    return ""


def extra_splits(spec: KernelSpec, config) -> int:
    """The splits of the extra cache's list in a Gluon launch of ``spec`` with ``config`` (0 without one): as many
    of the main list's chunks (its top-k over ``config.num_splits``, in whole 64-key tiles) as the extra list
    needs, at least one. The launch has ``config.num_splits`` + these splits; the last ones walk the extra list."""
    if not spec.extra_topk:
        return 0
    chunk = -(-(-(-spec.topk // config.num_splits)) // 64) * 64
    return max(1, -(-spec.extra_topk // chunk))


# The formats the raw-row kernel reads (fp8_ds_mla since session 43; model1's 64-dim groups and bf16 rope in V do not
# fit its P.V: see the template)
RAW_FORMATS = ("fp8_e4m3", "fp8_ds_mla")


def raw_problem(kernel) -> str:
    """What a GluonKernel with raw=True lacks for the raw-row kernel ("" if it runs)."""
    if kernel.spec.kv_format not in RAW_FORMATS:
        return f"kv_format in {RAW_FORMATS} (the raw rows' e4m3 with one per-tensor scale, or a scale per 128 dims)"
    if kernel.block_h != 16:
        return "block_h 16 (its heads are wgmma's N)"
    if kernel.spec.extra_topk:
        return "no extra cache"
    if kernel.persistent or kernel.staged_out or kernel.tail_split or kernel.parts_bf16 or kernel.profile:
        return "none of persistent, staged_out, tail_split, parts_bf16, profile"
    return ""


def gluon_launch_options(gmod) -> dict:
    """A rendered Gluon module's launch options: its warps, its register limit where it sets one, and launch_pdl
    where it waits for the stream's previous kernel (GluonKernel.pdl_wait)."""
    opts = dict(num_warps=gmod.NUM_WARPS.value)
    # (getattr: benchmarks/ptx_same.py compiles modules rendered from older templates, without MAX_REGS)
    if getattr(gmod, "MAX_REGS", None) is not None and gmod.MAX_REGS.value:
        opts["maxnreg"] = gmod.MAX_REGS.value
    if getattr(gmod, "LAUNCH_PDL", None) is not None:
        opts["launch_pdl"] = True
    return opts


@dataclass(frozen=True)
class GluonKernel:
    """``spec``'s Gluon module for a tiling (heads per program, and the narrow kernel's dequantizing
    warp groups), as gen.render renders and caches it."""

    spec: KernelSpec
    block_h: int = 64
    loaders: int = 1  # the narrow kernel's warp groups that dequantize (fp8) or gather (bf16)
    stages: int = 2  # the narrow kernel's stages (1: two programs per SM)
    # Where Q is loaded: by the computing warp group once the partitions run, so the loading groups
    # start at once (True), or by its warps before the partitions start (False). None: the rule
    # measured in session 17 (benchmarks/results/session17/README.md): the computing group for an fp8
    # cache or the narrow kernel (1.01-1.18x faster, bf16 narrow T=128 0.99x), before the partitions
    # for the wide kernel with a bf16 cache (0.94-0.99x with the computing group).
    q_by_compute: bool | None = None
    # The wide kernel's S group keeps Q's first q_regs x 64 columns in registers (wgmma's A operand), so
    # S reads only K there from shared memory: 0, 4, 6 or 8 (the rest is read as one power-of-two
    # slice); ptxas (Triton 3.6): 0 B spilled with 4 or 6, 60 B with 8. None: the rule measured in
    # session 18 (benchmarks/results/session18/README.md): 4 with a bf16 cache (1.01-1.08x faster in
    # all six rows timed, 6 and 8 less), 0 otherwise (with an fp8 cache B has 160 registers).
    q_regs: int | None = None
    # Q copied by cp.async, every chunk in flight before any is waited for (True), or loaded into
    # registers and stored a chunk at a time (False, the template before session 18). None: the rule
    # measured in session 18 (benchmarks/results/session18/README.md, calls 3 and 4): cp.async but for
    # 16-head programs with an fp8_e4m3 cache and d_qk 576, where the old load was 2-5% faster in all
    # three rows timed (T=256 H=16 twice, T=128 H=16); elsewhere (32-head programs with that cache too)
    # cp.async was as fast or up to 9% faster.
    q_async: bool | None = None
    # The wide kernel's S group takes P for its own P.V share from registers, not back from shared
    # memory (session 18: 1.01-1.04x alone; beside q_regs=4 slower than q_regs=4 alone in 4 of 6 rows;
    # kept as an option)
    p_regs: bool = False
    # (Measured on the H200 and removed in session 19, see DEVELOPERS.md: early_free, the narrow kernel's
    # P.V in halves; defer_pv, the wide kernel's B leaving its P.V running into the next tile's S;
    # two_consumers, FlashMLA's producer and two consumers. Commit 31ae2ae has their code.)
    # The wide kernel with a bf16 cache as a persistent kernel (session 24): one program per SM loops over the
    # units (token, head block, split), taking a ``num_units`` argument after ``num_splits``; the next unit's
    # tile 0 and Q load under the current unit's tail. Not with FUSED (the runtime's _fused) or profile.
    persistent: bool = False
    # The wide kernel's group A writes its output columns (without split-K) through a stage it is done with, as
    # 16-byte stores of a row's adjacent columns, not its accumulators' 4-byte ones (session 24: 1.025-1.087x
    # in the 10 rows timed; with persistent, through the last tile's stage: prepared, not yet timed).
    staged_out: bool = False
    # The persistent kernel with the last tokens' units split (session 30; the runtime's default): units below a
    # ``whole_units`` argument (after ``num_units``; a whole number of tokens, a whole number of rounds of the
    # grid) are whole (token, head block) pairs, the rest split the last tokens' lists ``num_splits`` ways and
    # write partials for the combine kernel, rows counted from the first tail token. Without it the last round
    # runs a few whole units while the other SMs wait (bf16 prefill T=4096 H=128 on 132 SMs: 62.06 rounds).
    tail_split: bool = False
    # Launched as a programmatic dependent of the stream's previous kernel (launch_pdl), each program waits for it
    # (griddepcontrol.wait) before touching memory: the launch and the programs' residency overlap that kernel's end
    # (session 30; the runtime's default: 1.005-1.030x in 10 of 14 small-T rows on an H100).
    pdl_wait: bool = False
    # The computing group's proxy fence after each tile's READY wait (B's in the wide kernel, M's in the narrow one).
    # A bf16 stage arrives by cp.async and needs it; an fp8 stage is stored by group C, which fences its own stores
    # before it arrives, so False drops a redundant fence (session 26; timed in session 28: no gain in three rows).
    ready_fence: bool = True
    # Group C applies model1's ue8m0 scales to the bf16 values, two a multiply (HMUL2.BF16), not to the float32 ones
    # before packing them (the same values: the scale is a power of two): 126 fewer instructions a tile in the narrow
    # kernel's C loop (1003 in SASS, Triton 3.6). None: the rule, on for model1 (session 31, on an H100: 1.00-1.045x
    # in the eight rows timed, never slower; benchmarks/results/session31/README.md). Refused for fp8_ds_mla, whose
    # float32 scales would round.
    bf16_scale: bool | None = None
    # (Measured on an H100 in session 31 and removed: lazy_rescale, the narrow kernel's reference max moved only where
    # a head's max grew by more than 8, so most tiles branched around O^T's rescale, 0.98-0.99x. Commit 0c4a1bb has
    # its code.)
    # (Measured on an H100 in session 30 and removed, see DEVELOPERS.md: s_ahead, the narrow kernel's next S before
    # the softmax, and its three-stage variant. Commit b395935's template has their code.)
    # (Measured on an H100 in session 35 and removed: parts_f16, the narrow kernel's split-K partials as float16 in
    # whole 32-byte sectors, each row scaled by powers of two, with the combine's PARTS_F16, 0.88-0.98x in 13 rows.
    # Commit 0817c6a has its code.)
    # The split-K partials as bfloat16 in whole 32-byte sectors (the narrow kernel's ``_write_parts_bf16``, the wide
    # kernel's ``_write_rows_bf16``, one format), for the combine kernel's PARTS_BF16 (sessions 35 and 36:
    # runtime/triton_backend.parts_bf16_for's rule). Not with FUSED (the kernel asserts it) nor persistent.
    parts_bf16: bool = False
    # A diagnostic build: clock stamps at phase boundaries into an extra ``prof`` kernel argument
    # (benchmarks/calls/gluon_timeline.py; the runtime never renders it)
    profile: bool = False
    # The raw-row narrow kernel (templates/sparse_mla_gluon_raw.py.jinja, session 42): an fp8_e4m3 cache, 16 heads a
    # program, no split-K, no extra cache. G gathers the e4m3 rows as stored by cp.async; both products run on e4m3
    # operands, V^T as wgmma's A straight from registers. Its tiling is its own (two 36 KB stages, two programs an SM),
    # so the config's warps and stages do not apply. The runtime's rule (runtime/triton_backend.raw_for) picks it.
    raw: bool = False
    # Group C (an fp8 cache's dequantizing kernels) prefetches the next tile's rows into L2 as it loads a tile (True),
    # or not (False). None: the rule measured on an H100 in session 48 (benchmarks/results/session48/README.md, calls
    # 14-15): on in the wide kernel (0.88-1.05x without it in 6 rows: it helps one-split fp8_ds_mla and model1 at
    # T=128), off in the narrow one (1.01-1.22x faster without it in all 13 rows timed, 16 and 32 heads, split or not).
    c_prefetch: bool | None = None
    # The raw kernel's L2 prefetch: G gathering tile j prefetches tile j + 1's rows into L2 first (1) or not (0). 0
    # since session 48: the kernel of sessions 42-47 prefetched, and on an H100 ran 1.02-1.20x faster without it in all
    # 10 rows timed (fp8, fp8_nope, fp8_ds_mla, T = 64-256, 16 and 32 heads); two and three tiles ahead were slower
    # still and are gone (benchmarks/results/session48/README.md, calls 5-6).
    l2_ahead: int = 0
    # ... issued after tile j's cp.asyncs, not before them (an experiment, session 48: whether the prefetch's cost is
    # the delay of the tile's own copies)
    l2_late: bool = False

    @property
    def template(self) -> str:
        return "sparse_mla_gluon_raw.py.jinja" if self.raw else "sparse_mla_gluon.py.jinja"

    def __post_init__(self):
        why = unsupported(self.spec)
        if why:
            raise ValueError(f"no Gluon kernel for {self.spec.key}: {why}")
        if self.raw:
            why = raw_problem(self)
            if why:
                raise ValueError(f"no raw Gluon kernel for {self.spec.key} ({self.key}): expected {why}")
        if self.l2_ahead and not (self.raw and self.l2_ahead == 1):
            raise ValueError(f"no Gluon kernel for {self.spec.key} ({self.key}) with l2_ahead={self.l2_ahead}: "
                             "expected 0, or 1 with raw=True (only the raw kernel's gather prefetches into L2)")
        if self.l2_late and not (self.raw and self.l2_ahead):
            raise ValueError(f"no Gluon kernel for {self.spec.key} ({self.key}) with l2_late=True: expected raw=True "
                             "and l2_ahead > 0 (a prefetch to issue late)")
        if self.c_prefetch is None:
            object.__setattr__(self, "c_prefetch", self._c_prefetch_rule)
        if not self.c_prefetch and not self._has_group_c:
            raise ValueError(f"no Gluon kernel for {self.spec.key} ({self.key}) with c_prefetch=False: expected an "
                             "fp8 cache's dequantizing kernel (raw=False; its group C prefetches)")
        if self.q_by_compute is None:
            object.__setattr__(self, "q_by_compute", self.spec.kv_format != "auto" or self.narrow)
        if self.q_async is None:
            object.__setattr__(self, "q_async", not (self.block_h == 16 and self.spec.kv_format == "fp8_e4m3"
                                                     and self.spec.d_qk == 576))
        if self.q_regs is None:
            object.__setattr__(self, "q_regs", 4 if not self.narrow and self.spec.kv_format == "auto" else 0)
        if self.q_regs not in (0, 4, 6, 8) or (self.q_regs and (self.narrow or self.spec.kv_format != "auto")):
            raise ValueError(f"no Gluon kernel for {self.spec.key} with block_h={self.block_h}, "
                             f"q_regs={self.q_regs}: expected 0, or 4, 6 or 8 with block_h 64 and a bf16 cache "
                             "(with an fp8 cache group B has 160 registers: 276-516 B spilled)")
        if self.p_regs and self.narrow:
            raise ValueError(f"no Gluon kernel for {self.spec.key} with block_h={self.block_h}, p_regs=True: "
                             "expected block_h 64 (the narrow kernel's P is wgmma's B operand, read from shared memory)")
        if self.persistent and (self.narrow or self.spec.kv_format != "auto" or not self.q_async or self.profile
                                or self.q_by_compute or self.spec.extra_topk):
            raise ValueError(f"no persistent Gluon kernel for {self.spec.key} with block_h={self.block_h}: expected "
                             "block_h 64, a bf16 cache, Q by cp.async before the partitions, no profile and no extra cache")
        if self.tail_split and not (self.persistent and self.staged_out):
            raise ValueError(f"no Gluon kernel for {self.spec.key} with tail_split=True: expected persistent=True and "
                             "staged_out=True (the whole units' output goes through a stage, the tail's to partials)")
        if self.staged_out and self.narrow:
            raise ValueError(f"no Gluon kernel for {self.spec.key} with block_h={self.block_h}, staged_out=True: "
                             "expected block_h 64 (the narrow kernel's output went through a stage in session 23's "
                             "STAGED_STORE, and lost)")
        if not self.ready_fence and self.spec.kv_format == "auto":
            raise ValueError(f"no Gluon kernel for {self.spec.key} with ready_fence=False: expected an fp8 cache "
                             "(a bf16 stage arrives by cp.async, whose writes the computing group must fence)")
        if self.bf16_scale is None:
            object.__setattr__(self, "bf16_scale", self.spec.kv_format == "model1")
        if self.bf16_scale and self.spec.kv_format != "model1":
            raise ValueError(f"no Gluon kernel for {self.spec.key} with bf16_scale=True: expected kv_format 'model1' "
                             "(ue8m0 scales, exact in bf16; fp8_ds_mla's float32 scales would round)")
        if self.parts_bf16 and self.persistent:
            raise ValueError(f"no persistent Gluon kernel for {self.spec.key} with parts_bf16=True: expected "
                             "persistent=False (a tail split's partials are merged as float32)")
        why = _tiling_problem(self.block_h, self.loaders, self.stages)
        if why:
            raise ValueError(f"no Gluon kernel for {self.spec.key} with block_h={self.block_h}, "
                             f"loaders={self.loaders}, stages={self.stages}: expected {why}")
        if self.loaders == 2 and self.spec.kv_format == "auto":
            # (sessions 36-37: two gathering groups, each half of every tile's columns, 0.97-1.00x on an H100 in five
            # rows; a T=1 tile lands no sooner with 8 or 16 gathering warps than with 4. Commit 1f3eff6 has them.)
            raise ValueError(f"no Gluon kernel for {self.spec.key} with loaders=2: expected 1 with a bf16 cache (two "
                             "loading warp groups dequantize alternate tiles of an fp8 cache)")

    @classmethod
    def for_config(cls, spec: KernelSpec, config, persistent: bool = False, staged_out: bool = False,
                   tail_split: bool = False, pdl_wait: bool = False, parts_bf16: bool = False,
                   raw: bool = False) -> "GluonKernel":
        return cls(spec, config.block_h, config_loaders(config), config.num_stages, persistent=persistent,
                   staged_out=staged_out, tail_split=tail_split, pdl_wait=pdl_wait, parts_bf16=parts_bf16, raw=raw)

    @property
    def _has_group_c(self) -> bool:
        """Whether the kernel has a group C (an fp8 cache's dequantizing warp group)."""
        return self.spec.kv_format != "auto" and not self.raw

    @property
    def _c_prefetch_rule(self) -> bool:
        """c_prefetch's rule (the field's comment): off in the narrow kernel's group C (its key names only a departure:
        cp, ncp)."""
        return not (self.narrow and self._has_group_c)

    @property
    def narrow(self) -> bool:
        return self.block_h < 64

    @property
    def _variant(self) -> list[str]:
        """What sets this variant apart, as name parts (after the spec's key and "gluon")."""
        if self.raw:  # (its tiling is its own: only the launch's PDL wait sets its variants apart)
            return (["h16", "raw"] + ([f"pf{self.l2_ahead}"] if self.l2_ahead else [])
                    + (["pfl"] if self.l2_late else [])
                    + (["pw"] if self.pdl_wait else []))
        parts = []
        if self.narrow:
            parts += [f"h{self.block_h}", f"l{self.loaders}"] + (["s1"] if self.stages == 1 else [])
        flags = [("qc", self.q_by_compute), (f"qr{self.q_regs}", self.q_regs), ("pr", self.p_regs),
                 ("ql", not self.q_async), ("ps", self.persistent), ("so", self.staged_out), ("ts", self.tail_split),
                 ("bs", self.bf16_scale), ("nrf", not self.ready_fence),
                 (("cp" if self.c_prefetch else "ncp"), self.c_prefetch != self._c_prefetch_rule),
                 ("pw", self.pdl_wait), ("pb", self.parts_bf16), ("prof", self.profile)]
        return parts + [name for name, on in flags if on]

    @property
    def key(self) -> str:
        return "-".join([self.spec.key + "-gluon"] + self._variant)

    @property
    def module_name(self) -> str:
        return "_".join([self.spec.module_name + "_gluon"] + self._variant)

    def template_context(self) -> dict:
        if self.raw:
            return dict(kspec=self.spec, pdl_wait=self.pdl_wait, l2_ahead=self.l2_ahead, l2_late=self.l2_late)
        return dict(kspec=self.spec, cache=cache_descs(self.spec)[0], x=self.spec.extra_topk > 0, narrow=self.narrow,
                    block_h=self.block_h,
                    loaders=self.loaders, stages=self.stages, q_by_compute=self.q_by_compute, q_regs=self.q_regs,
                    p_regs=self.p_regs, q_async=self.q_async, persistent=self.persistent, staged_out=self.staged_out,
                    tail_split=self.tail_split, pdl_wait=self.pdl_wait,
                    ready_fence=self.ready_fence, bf16_scale=self.bf16_scale, parts_bf16=self.parts_bf16,
                    profile=self.profile, c_prefetch=self.c_prefetch,
                    sync_floats=SYNC_FLOATS)
