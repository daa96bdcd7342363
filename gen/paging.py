"""Specs of the small page and index kernels a serving engine runs around attention.

Each spec is frozen, validates its fields at construction and renders one template through
``render.load_module``: ``key`` names the module, keys the render cache and appears in every
error. ``PagingConfig`` holds the tunables (elements per program step, warps); each spec's
``default_config()`` is the arch's untuned choice. ``compile_paging`` compiles every kernel
of a spec for a GPU target without a GPU (the CPU tests use it for sm90/sm120/sm121).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from .layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES, model1_page_bytes
from .spec import ARCHS, module_name_for, next_pow2

# Elements per program step and warps, by arch: the ~99 KB-shared-memory parts (sm120/121) have
# fewer registers in flight per SM, so they take smaller steps.
_DEFAULT_BLOCK = {"sm90": 1024, "sm120": 512, "sm121": 512}
# convert_indices with compaction takes a whole row per program step when it fits this.
_COMPACT_BLOCK = {"sm90": 4096, "sm120": 2048, "sm121": 2048}
MARK_BLOCK = 1024  # token ids per program of page_split's mark kernel
COMPACT_BLOCK = 256  # page marks per program of its compact kernel (more programs: its loads are latency-bound)
PIECE_WORDS = 1024  # largest piece (8-byte words) of one load in page_split's list kernel
INFLIGHT_WORDS = 8192  # most words page_split's list kernel loads before it stores them (64 KB)
CHUNK_WORDS = 512  # page_split_chunk_kernel: largest data chunk (4 KB)
TMA_ROW_BYTES = 64  # page_split_tma_kernel views the pools as rows of 64 B: 576 B rows and pages are whole rows
TMA_BOX_ROWS = 64  # its data boxes: at most 64 rows (4 KB)


def _pow2(x) -> bool:
    return isinstance(x, int) and x > 0 and x & (x - 1) == 0


def _check_int(obj, name, lo, hi):
    v = getattr(obj, name)
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ValueError(f"{type(obj).__name__}.{name}={v!r}: expected an int in {lo}..{hi}")


def _check_arch(obj):
    if obj.arch not in ARCHS:
        raise ValueError(f"{type(obj).__name__}.arch={obj.arch!r}: expected one of {tuple(ARCHS)}")


@dataclass(frozen=True)
class PagingConfig:
    """Tunables of one paging kernel launch: ``block`` elements (index entries or 8-byte
    words) per program step, ``num_warps``, and for a kernel with a fixed grid that strides
    over its work (page_split of touched pages), ``programs_per_sm``; for page_split's mark kernel,
    ``mark_dedup``: store each page once per block (sorted) instead of once per token id, and
    ``mark_copies``: rows of marks the mark programs spread over (so fewer stores hit one address),
    ``mark_check``: store a mark only where a load of it reads 0 (fewer scattered stores),
    ``mark_spacing``: bytes from one page's mark to the next (32: one L2 sector per mark),
    ``mark_claim``: mark and list in one kernel (atomic claims; replaces mark + compact),
    ``chunks``: 0 copies the listed pages with page_split_list_kernel (a destination page per program
    step), n > 0 with page_split_chunk_kernel (n adjacent 4 KB chunks per program step; on the H200
    faster alone and on the plain path, slower beside the lead share's concurrent kernels),
    ``lead_split``: 0, or mark and list the first 1/lead_split of the ids first and copy their
    pages on a side stream while the rest are marked (a page is listed once either way), for calls
    with at least ``lead_min_ids`` ids (fewer: the plain path, whose fixed cost is lower) that a
    CUDA graph captures (eager, the extra launches cost more host time than they save),
    ``tma_stages``: 0, or copy the listed pages with page_split_tma_kernel (TMA bulk copies through
    shared memory, one program per SM, this many destination pages in flight in each; fewer where
    the arch's shared memory holds fewer) on a GPU of sm90 or later, in calls a CUDA graph captures
    (eager, its launch costs more host time than it saves; under the interpreter, where
    ``PageSplitTma`` does not fit the page sizes, and with mark_claim, whose claims the copy clears,
    the list copy; with the lead share, the rest's copy is the list kernel: its programs start beside
    the lead's TMA copy)."""

    block: int = 1024
    num_warps: int = 4
    programs_per_sm: int = 4
    mark_dedup: bool = False
    mark_copies: int = 1
    mark_check: bool = False
    mark_claim: bool = False
    chunks: int = 0
    mark_spacing: int = 1
    lead_split: int = 0
    lead_min_ids: int = 0
    tma_stages: int = 0

    def check(self, spec) -> "PagingConfig":
        if not _pow2(self.block) or not 64 <= self.block <= 8192:
            raise ValueError(f"PagingConfig.block={self.block!r} for {spec.key}: "
                             f"expected a power of two in 64..8192")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"PagingConfig.num_warps={self.num_warps!r} for {spec.key}: "
                             f"expected one of 1, 2, 4, 8, 16")
        if not isinstance(self.programs_per_sm, int) or not 1 <= self.programs_per_sm <= 32:
            raise ValueError(f"PagingConfig.programs_per_sm={self.programs_per_sm!r} for {spec.key}: "
                             f"expected an int in 1..32")
        for flag in ("mark_dedup", "mark_check", "mark_claim"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"PagingConfig.{flag}={getattr(self, flag)!r} for {spec.key}: "
                                 f"expected True or False")
        if not _pow2(self.mark_copies) or not 1 <= self.mark_copies <= 64:
            raise ValueError(f"PagingConfig.mark_copies={self.mark_copies!r} for {spec.key}: "
                             f"expected a power of two in 1..64")
        if not _pow2(self.mark_spacing) or not 1 <= self.mark_spacing <= 128:
            raise ValueError(f"PagingConfig.mark_spacing={self.mark_spacing!r} for {spec.key}: "
                             f"expected a power of two in 1..128")
        if self.chunks and (not _pow2(self.chunks) or not 1 <= self.chunks <= 16):
            raise ValueError(f"PagingConfig.chunks={self.chunks!r} for {spec.key}: "
                             f"expected 0 or a power of two in 1..16")
        if self.lead_split and (not _pow2(self.lead_split) or not 2 <= self.lead_split <= 64):
            raise ValueError(f"PagingConfig.lead_split={self.lead_split!r} for {spec.key}: "
                             f"expected 0 or a power of two in 2..64")
        if not isinstance(self.lead_min_ids, int) or isinstance(self.lead_min_ids, bool) \
                or not 0 <= self.lead_min_ids <= 1 << 40:
            raise ValueError(f"PagingConfig.lead_min_ids={self.lead_min_ids!r} for {spec.key}: "
                             f"expected an int in 0..2**40")
        if self.tma_stages and (not isinstance(self.tma_stages, int) or isinstance(self.tma_stages, bool)
                                or not 2 <= self.tma_stages <= 8):
            raise ValueError(f"PagingConfig.tma_stages={self.tma_stages!r} for {spec.key}: "
                             f"expected 0 or an int in 2..8")
        if self.lead_split and (self.mark_claim or self.mark_dedup):
            raise ValueError(f"PagingConfig(lead_split={self.lead_split}, mark_claim={self.mark_claim}, "
                             f"mark_dedup={self.mark_dedup}) for {spec.key}: the lead share needs the plain "
                             f"mark kernel; expected mark_claim=False and mark_dedup=False")
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d) -> "PagingConfig":
        """The config a table entry holds; a missing field takes its default, an unknown one is an error."""
        if not isinstance(d, dict):
            raise ValueError(f"PagingConfig: expected an object, got {type(d).__name__}")
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"PagingConfig: unknown fields {sorted(unknown)}")
        return cls(**d)

    def label(self, base: "PagingConfig | None" = None) -> str:
        """The fields that differ from ``base`` (default PagingConfig()), for progress lines and tables."""
        base = base or PagingConfig()
        return " ".join(f"{k}={v}" for k, v in self.to_dict().items() if getattr(base, k) != v) or "the default"


class _Spec:
    """What the renderer needs besides ``key`` and ``template``."""

    @property
    def module_name(self) -> str:
        return module_name_for(self.key)

    def template_context(self) -> dict:
        return {}


@dataclass(frozen=True)
class ConvertIndicesSpec(_Spec):
    """Request-local top-k positions -> global slot ids through a block table."""

    page_size: int
    topk: int
    arch: str = "sm90"

    template = "convert_indices.py.jinja"

    def __post_init__(self):
        _check_int(self, "page_size", 1, 1 << 16)
        _check_int(self, "topk", 1, 1 << 20)
        _check_arch(self)

    @property
    def key(self) -> str:
        return f"convert_indices-{self.arch}-p{self.page_size}-k{self.topk}"

    def default_config(self, compact: bool = False) -> PagingConfig:
        if compact:  # one pass over the whole row: a block-wide prefix sum places every entry
            return PagingConfig(min(_COMPACT_BLOCK[self.arch], max(64, next_pow2(self.topk))), 8)
        return PagingConfig(min(_DEFAULT_BLOCK[self.arch], max(64, next_pow2(self.topk))), 4)


@dataclass(frozen=True)
class PackValidPrefixSpec(_Spec):
    """CSR packing of each row's valid prefix ([T, width] slots -> flat indices)."""

    width: int
    arch: str = "sm90"

    template = "pack_valid_prefix.py.jinja"

    def __post_init__(self):
        _check_int(self, "width", 1, 1 << 20)
        _check_arch(self)

    @property
    def key(self) -> str:
        return f"pack_valid_prefix-{self.arch}-w{self.width}"

    def default_config(self) -> PagingConfig:
        return PagingConfig(min(_DEFAULT_BLOCK[self.arch], max(64, next_pow2(self.width))), 4)


@dataclass(frozen=True)
class PageSplitSpec(_Spec):
    """MODEL1 footer pages of ``src_page_size`` tokens -> pages of ``dst_page_size`` tokens."""

    src_page_size: int
    dst_page_size: int = 64
    arch: str = "sm90"

    template = "page_split.py.jinja"

    def __post_init__(self):
        _check_int(self, "src_page_size", 1, 1 << 16)
        _check_int(self, "dst_page_size", 1, 1 << 16)
        _check_arch(self)
        if self.src_page_size % self.dst_page_size:
            raise ValueError(f"PageSplitSpec.src_page_size={self.src_page_size}: expected a multiple "
                             f"of dst_page_size={self.dst_page_size}")

    @property
    def key(self) -> str:
        return f"page_split-{self.arch}-model1-p{self.src_page_size}-to{self.dst_page_size}"

    def template_context(self) -> dict:
        # Everything in 8-byte words: every MODEL1 offset and page size is a multiple of 8 bytes.
        P, D = self.src_page_size, self.dst_page_size
        return dict(ratio=P // D,
                    src_page_words=model1_page_bytes(P) // 8,
                    dst_page_words=model1_page_bytes(D) // 8,
                    data_words=D * M1_DATA_ROW_BYTES // 8,
                    scale_words=D * M1_SCALE_ROW_BYTES // 8,
                    src_scale_words=P * M1_DATA_ROW_BYTES // 8,
                    groups=self.copy_groups(), **self.data_chunks())

    def data_chunks(self) -> dict:
        """page_split_chunk_kernel's data chunk: the largest power of two of at most CHUNK_WORDS
        words that divides a destination page's data words, so chunks never straddle pages."""
        data_words = self.dst_page_size * M1_DATA_ROW_BYTES // 8
        chunk = min(CHUNK_WORDS, data_words & -data_words)
        scale_words = self.dst_page_size * M1_SCALE_ROW_BYTES // 8
        return dict(chunk_words=chunk, chunks_per_part=data_words // chunk,
                    scale_block=min(1024, next_pow2(scale_words)))

    def copy_groups(self) -> list[list[dict]]:
        """One destination page's words as power-of-two pieces of at most PIECE_WORDS (each a dict
        of kind "data"/"scale", src: offset in that region of the source part, dst: offset in the
        destination page, size), grouped into at most INFLIGHT_WORDS words per group."""
        D = self.dst_page_size
        pieces = []
        for kind, words, dst0 in (("data", D * M1_DATA_ROW_BYTES // 8, 0),
                                  ("scale", D * M1_SCALE_ROW_BYTES // 8, D * M1_DATA_ROW_BYTES // 8)):
            off = 0
            while off < words:
                size = min(PIECE_WORDS, 1 << ((words - off).bit_length() - 1))
                pieces.append(dict(kind=kind, src=off, dst=dst0 + off, size=size))
                off += size
        groups, words = [[]], 0
        for p in pieces:
            if words + p["size"] > INFLIGHT_WORDS:
                groups, words = groups + [[]], 0
            groups[-1].append(p)
            words += p["size"]
        return groups

    def default_config(self, touched: bool = False) -> PagingConfig:
        """Every page: ``block`` words per step, one program per destination page. Touched pages
        only: ``num_warps`` and ``programs_per_sm`` of the list kernel's fixed grid (its pieces
        come from the spec, ``block`` is not used)."""
        # A power of two that divides the data words when it can, so the last step is not half empty.
        data_words = self.dst_page_size * M1_DATA_ROW_BYTES // 8
        block = min(_DEFAULT_BLOCK[self.arch], max(64, data_words & -data_words))
        if touched:
            # Measured on the H200: session 4, 834 pages 124 -> 95 us, 4 pages 22.7 -> 10.9 us;
            # session 8, one L2 sector per mark and 2 rows of them: 97.0 -> 88.2 us, 10.0 -> 7.5 us;
            # session 9, one L2 line per mark (2 x 128 B of marks per page, 0.17% of a pool of
            # 256-token pages): 834 consecutive pages 96.3 -> 82.7 us, scattered 87.2 -> 86.2 us;
            # session 10, a lead 1/8 of the ids copied on a side stream while the rest are marked:
            # 524K ids over 834 scattered / consecutive pages 86.4 -> 80.6 us / 85.2 -> 79.3 us,
            # 131K ids 77.3 -> 76.3 us, but 6.5 -> 12.0 us for 524K ids crowded into 4 pages (two
            # more kernels and the fork/join). Below 128K ids (a step of < 64 tokens x 2048) the
            # fixed cost dominates, so those calls take the plain path, and so do eager calls
            # (runtime/paging.py's _takes_lead: host-bound at 340-420 us against 160-170 us);
            # session 11, the copy's grid 16 warps x 2 programs per SM (from 8 x 4; half the register
            # file, so the rest of the mark runs beside the lead copy), faster with the lead share in
            # all five runs since session 10: scattered by 0.3-2.2 us (80.5-81.7 -> 79.3-80.2 us),
            # consecutive by 1.7-3.5 us (77.9-79.0 -> 75.5-76.4 us), the other pools within 0.7 us.
            # Session 19 (sm90 only, not measured elsewhere): the copy by TMA, 3 pages in flight per SM
            # (the copy alone 72.1 -> 68.2 us scattered, 69.0 -> 64.1 consecutive, against ~60.7 us of
            # copy_), and a lead 1/32 of the ids: whole calls in a graph 79.1 -> 76.7 us scattered,
            # 75.8 -> 75.0 consecutive, 76.3 -> 74.9 for 131K ids, 11.2 -> 8.8 us for 4 pages.
            if self.arch == "sm90" and PageSplitTma.problem(self) is None:
                return PagingConfig(block, 16, 2, mark_copies=2, mark_spacing=128, lead_split=32,
                                    lead_min_ids=1 << 17, tma_stages=3)
            return PagingConfig(block, 16, 2, mark_copies=2, mark_spacing=128, lead_split=8,
                                lead_min_ids=1 << 17)
        return PagingConfig(block, 4)


@dataclass(frozen=True)
class PageSplitTma(_Spec):
    """page_split's copy of listed pages by TMA for ``spec`` (templates/page_split_tma.py.jinja): the
    pools viewed as rows of TMA_ROW_BYTES, a destination page's data rows moved as boxes of at most
    TMA_BOX_ROWS rows and its scale rows as one box, a stage of shared memory per page in flight.
    ``problem(spec)`` says why a spec has none (the runtime then runs the list copy)."""

    spec: PageSplitSpec

    template = "page_split_tma.py.jinja"

    def __post_init__(self):
        why = self.problem(self.spec)
        if why:
            raise ValueError(f"no TMA copy for {self.spec.key}: {why}")

    @staticmethod
    def stage_bytes(spec: PageSplitSpec) -> int:
        """Shared memory of one stage: one destination page's data and scale rows."""
        return spec.dst_page_size * (M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES)

    @classmethod
    def max_stages(cls, spec: PageSplitSpec) -> int:
        return (ARCHS[spec.arch].smem_bytes - 1024) // cls.stage_bytes(spec)  # (1 KB: barriers, alignment)

    @classmethod
    def stages(cls, spec: PageSplitSpec, requested: int) -> int:
        """The stages a config's ``tma_stages`` runs with on ``spec.arch``: as many as fit."""
        return min(requested, cls.max_stages(spec))

    @classmethod
    def problem(cls, spec: PageSplitSpec) -> str | None:
        D = spec.dst_page_size
        if D % 16 or not _pow2(D // 8) or D // 8 > 256:
            return (f"dst_page_size={D}: expected 16 x a power of two up to 2048 (its scale rows, {D} x 8 B, "
                    f"are one TMA box of rows of {TMA_ROW_BYTES} B, a power of two of at most 256 rows, and "
                    f"at least 128 B: a box in shared memory starts on a 128-byte boundary)")
        if cls.max_stages(spec) < 2:
            return (f"dst_page_size={D}: two stages of {cls.stage_bytes(spec)} B exceed {spec.arch}'s "
                    f"{ARCHS[spec.arch].smem_bytes} B of shared memory per block")
        return None

    @property
    def key(self) -> str:
        return self.spec.key + "-tma"

    def template_context(self) -> dict:
        P, D = self.spec.src_page_size, self.spec.dst_page_size
        part_rows = D * M1_DATA_ROW_BYTES // TMA_ROW_BYTES  # 9 D
        box = min(TMA_BOX_ROWS, D)  # D is a power of two: 9 D rows are 9 D / box boxes
        return dict(ratio=P // D, row_bytes=TMA_ROW_BYTES, part_rows=part_rows, box_rows=box,
                    boxes=part_rows // box, scale_rows=D * M1_SCALE_ROW_BYTES // TMA_ROW_BYTES,
                    src_page_rows=model1_page_bytes(P) // TMA_ROW_BYTES,
                    dst_page_rows=model1_page_bytes(D) // TMA_ROW_BYTES,
                    src_scale_row=P * M1_DATA_ROW_BYTES // TMA_ROW_BYTES,
                    stage_bytes=self.stage_bytes(self.spec))


def tma_layout():
    """The shared layout of the TMA copy's boxes and descriptors: 8-byte elements, no swizzle (a
    box is copied in and out whole, never read by threads)."""
    from triton.experimental.gluon import language as gl
    return gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=64, rank=2)


def compile_tma(spec: PageSplitSpec, arch: str, stages: int):
    """page_split_tma_kernel of ``spec`` compiled for ``arch`` with ``stages`` (without a GPU)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from .render import COMPILE_OPTIONS, load_compilable_module

    unit = PageSplitTma(PageSplitSpec(spec.src_page_size, spec.dst_page_size, arch))
    ctx, lay = unit.template_context(), tma_layout()
    data = f"tensordesc<i64[{ctx['box_rows']}, {TMA_ROW_BYTES // 8}],{lay!r}>"
    scale = f"tensordesc<i64[{ctx['scale_rows']}, {TMA_ROW_BYTES // 8}],{lay!r}>"
    sig = dict(src_data=data, dst_data=data, src_scale=scale, dst_scale=scale, pages="*i32", count="*i32",
               num_src_pages="i32", STAGES="constexpr")
    fn = load_compilable_module(unit).page_split_tma_kernel
    attrs = {(4,): [["tt.divisibility", 16]], (5,): [["tt.divisibility", 16]]}  # pages, count
    return triton.compile(GluonASTSource(fn, sig, dict(STAGES=stages), attrs),
                          target=GPUTarget("cuda", ARCHS[arch].cc, 32),
                          options={**COMPILE_OPTIONS, "num_warps": 1})


# Argument types of the generated kernels, by name, for compiling without a GPU.
_ARG_TYPES = {
    "convert_indices_kernel": dict(req_ids="*i32", block_table="*i32", local="*i32", out="*i32",
                                   counts="*i32"),
    "pack_valid_prefix_kernel": dict(slots="*i32", indptr="*i32", out="*i32"),
    "page_mark_kernel": dict(touched="*i32", marks="*i8", count="*i32"),
    "page_compact_kernel": dict(marks="*i8", pages="*i32", count="*i32"),
    "page_split_kernel": dict(src="*i64", dst="*i64"),
    "page_claim_kernel": dict(touched="*i32", claims="*i32", pages="*i32", count="*i32"),
    "page_split_list_kernel": dict(src="*i64", dst="*i64", pages="*i32", count="*i32", claims="*i32"),
    "page_split_chunk_kernel": dict(src="*i64", dst="*i64", pages="*i32", count="*i32", claims="*i32"),
}


def _kernel_variants(spec, config: PagingConfig | None) -> list[tuple[str, dict, PagingConfig]]:
    """(kernel name, constexprs, config) of every variant the runtime launches for ``spec``;
    ``config`` (None: each variant's default) replaces the defaults."""
    if isinstance(spec, ConvertIndicesSpec):
        return [("convert_indices_kernel", dict(COMPACT=c, BLOCK_K=cfg.block), cfg)
                for c in (False, True) for cfg in [config or spec.default_config(compact=c)]]
    if isinstance(spec, PackValidPrefixSpec):
        cfg = config or spec.default_config()
        return [("pack_valid_prefix_kernel", dict(BLOCK=cfg.block), cfg)]
    full, touched = config or spec.default_config(), config or spec.default_config(touched=True)
    return [("page_split_kernel", dict(BLOCK=full.block), full),
            *[("page_mark_kernel", dict(BLOCK=MARK_BLOCK, DEDUP=d, COPIES=touched.mark_copies, CHECK=c,
                                        SPACING=touched.mark_spacing),
               PagingConfig(MARK_BLOCK, 4)) for d, c in ((False, False), (True, False), (False, True))],
            *[("page_compact_kernel", dict(BLOCK=COMPACT_BLOCK, COPIES=touched.mark_copies,
                                           SPACING=touched.mark_spacing, LEAD=lead), PagingConfig(COMPACT_BLOCK, 4))
              for lead in (False, True)],
            ("page_claim_kernel", dict(BLOCK=MARK_BLOCK), PagingConfig(MARK_BLOCK, 4)),
            *[("page_split_list_kernel", dict(CLEAR=c), touched) for c in (False, True)],
            *[("page_split_chunk_kernel", dict(CLEAR=c, CHUNKS=touched.chunks or 8), touched) for c in (False, True)]]


def compile_paging(spec, arch: str | None = None, config: PagingConfig | None = None) -> dict:
    """Compile every kernel variant of ``spec`` for ``arch`` (default spec.arch) with Triton's
    GPU pipeline with each variant's default config, or ``config`` for all of them; returns
    {"kernel{constexprs}": shared bytes}. Raises RuntimeError naming
    the spec, arch and kernel that failed to build.

    Call it in a process that did not import triton under TRITON_INTERPRET=1: there Triton's
    own reduction helpers (behind tl.sum, tl.cumsum) are interpreter functions and cannot be
    compiled (the tests run it in a subprocess)."""
    from .compile_check import compile_jit
    from .render import load_compilable_module

    arch = arch or spec.arch
    if arch not in ARCHS:
        raise ValueError(f"arch={arch!r}: expected one of {tuple(ARCHS)}")
    if config is not None:
        config.check(spec)
    mod = load_compilable_module(spec)
    out = {}
    for name, constexprs, cfg in _kernel_variants(spec, config):
        label = f"{name}{constexprs}"
        try:
            compiled = compile_jit(getattr(mod, name), _ARG_TYPES[name], constexprs, arch, cfg.num_warps)
        except Exception as e:
            raise RuntimeError(f"{spec.key}: {label} does not compile for {arch}: "
                               f"{type(e).__name__}: {e}") from e
        out[label] = compiled.metadata.shared
    # The TMA copy, where the runtime would run it: a config with tma_stages, page sizes that fit the arch.
    at_arch = PageSplitSpec(spec.src_page_size, spec.dst_page_size, arch) if isinstance(spec, PageSplitSpec) else None
    stages = (config or spec.default_config(touched=True)).tma_stages if at_arch else 0
    if stages and PageSplitTma.problem(at_arch) is None:
        stages = PageSplitTma.stages(at_arch, stages)
        label = f"page_split_tma_kernel{{'STAGES': {stages}}}"
        try:
            out[label] = compile_tma(spec, arch, stages).metadata.shared
        except Exception as e:
            raise RuntimeError(f"{spec.key}: {label} does not compile for {arch}: {type(e).__name__}: {e}") from e
    return out


# The kernel paths a paging spec runs, and what a tuned table's buckets count for each: the runtime picks
# an entry by the call's size (``tuned_table.bucket_for``: the nearest bucket not above it).
PATHS = {"convert_indices": {"plain": "rows", "compact": "rows"},
         "pack_valid_prefix": {"plain": "rows"},
         "page_split": {"all": "source pages", "touched": "ids"}}


def spec_family(spec) -> str:
    return spec.key.split("-", 1)[0]


def check_path(spec, path: str) -> str:
    paths = PATHS[spec_family(spec)]
    if path not in paths:
        raise ValueError(f"path={path!r} for {spec.key}: expected one of {tuple(paths)}")
    return path


def default_config_for(spec, path: str) -> PagingConfig:
    """The arch's untuned config of ``spec``'s kernel ``path``."""
    check_path(spec, path)
    if isinstance(spec, ConvertIndicesSpec):
        return spec.default_config(compact=path == "compact")
    if isinstance(spec, PageSplitSpec):
        return spec.default_config(touched=path == "touched")
    return spec.default_config()


_KEY_PATTERNS = (
    (re.compile(r"convert_indices-(sm\d+)-p(\d+)-k(\d+)"), lambda a, p, k: ConvertIndicesSpec(int(p), int(k), a)),
    (re.compile(r"pack_valid_prefix-(sm\d+)-w(\d+)"), lambda a, w: PackValidPrefixSpec(int(w), a)),
    (re.compile(r"page_split-(sm\d+)-model1-p(\d+)-to(\d+)"), lambda a, p, d: PageSplitSpec(int(p), int(d), a)),
)


def spec_from_key(key: str):
    """The paging spec whose ``key`` is ``key`` (ValueError naming it otherwise)."""
    for pattern, make in _KEY_PATTERNS:
        m = pattern.fullmatch(str(key))
        if m:
            spec = make(*m.groups())
            if spec.key != key:  # (e.g. leading zeros)
                break
            return spec
    raise ValueError(f"paging spec key {key!r}: expected convert_indices-<arch>-p<page>-k<topk>, "
                     f"pack_valid_prefix-<arch>-w<width> or page_split-<arch>-model1-p<src>-to<dst>")
