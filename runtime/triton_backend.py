"""Launch a generated sparse-MLA module: argument marshalling, grid, split-K workspace.

``TritonLaunch`` prepares everything a launch needs that the call's signature fixes (the
kernels, grids, constexprs, cache views and every stride) once; calling it inserts only
the per-call tensors and ``sm_scale``. ``run_triton`` prepares and launches in one go.

After the first launch through Triton's JIT (which binds and specializes every argument), a
prepared kernel calls the compiled kernel's launcher directly (``_Direct``): that binding is
most of a launch's host time, and the signature already fixes everything it decides except
the per-call tensors' 16-byte alignment, which is checked per call.
"""
from __future__ import annotations

import inspect
import os
import threading
from dataclasses import replace

import torch

from sparsemla.gen.gluon import RAW_FORMATS, SYNC_FLOATS, GluonKernel, extra_splits, gluon_launch_options
from sparsemla.gen.render import COMPILE_OPTIONS, interpreting, load_module
from sparsemla.gen.spec import Config, KernelSpec, next_pow2

from .kvcache import KVCacheView
from .launch import capturing, kept_buffer, report_capture_buffers

# Split-K workspaces, one per (device, stream handle): launches on two streams of one device may run at once,
# and a shared buffer would mix their partials (and the FUSED kernels' counters, which could then hang).
_workspaces: dict = {}
# Workspaces replaced by a larger one, per device. They are never freed: a CUDA graph captured while one was
# current still writes its partials there on every replay, and freed memory would be handed to other tensors.
# Growth at least doubles, so these hold at most as much as the current workspace.
_retired: dict = {}
# SPARSEMLA_DIRECT_LAUNCH=0: every launch goes through Triton's JIT (to rule the direct launcher out).
_DIRECT = os.environ.get("SPARSEMLA_DIRECT_LAUNCH", "1") != "0"
# SPARSEMLA_PDL=0: the combine kernel is always launched after the attention kernel; by default it is
# launched as a programmatic dependent of a Gluon attention kernel whose grid fills at most half the SMs,
# or one wave with at most 4 splits or a combine of at most one program per SM (``_pdl``).
_PDL = os.environ.get("SPARSEMLA_PDL", "1") != "0"
# SPARSEMLA_FUSED_COMBINE=0: split-K partials always go to the combine kernel; by default a Gluon kernel of
# full 64-head programs with 2 splits merges them itself (``_fused``).
_FUSED = os.environ.get("SPARSEMLA_FUSED_COMBINE", "1") != "0"
# SPARSEMLA_PARTS_FIRST=0: the combine kernel never takes PARTS_FIRST; by default it does where its grid has
# at most one program per SM (``_parts_first``).
_PARTS_FIRST = os.environ.get("SPARSEMLA_PARTS_FIRST", "1") != "0"
# SPARSEMLA_PERSISTENT=0: the attention kernel never runs persistent; by default the wide Gluon kernel with a
# bf16 cache and rope does where its units fill at least 16 rounds of the SMs (``persistent_for``).
_PERSISTENT = os.environ.get("SPARSEMLA_PERSISTENT", "1") != "0"
# SPARSEMLA_STAGED_OUT=0: the wide Gluon kernel's group A writes its output from its accumulators' layout; by
# default, without split-K and not persistent, it writes through a stage (GluonKernel.staged_out; session 24,
# benchmarks/results/session24/README.md, call 8: 1.025-1.087x in all 10 rows timed, ABBA).
_STAGED_OUT = os.environ.get("SPARSEMLA_STAGED_OUT", "1") != "0"
# SPARSEMLA_TAIL_SPLIT=0: the persistent kernel runs its last round's units whole; by default it splits them
# (``tail_split_for``). Session 30 (an H100, 132 SMs like the H200; benchmarks/results/session30/README.md): whole /
# tail 1.017-1.020 in three bf16 prefill rows (ABBA, six repetitions), 1.003-1.015 and NoPE 0.990-1.015 on reruns.
_TAIL_SPLIT = os.environ.get("SPARSEMLA_TAIL_SPLIT", "1") != "0"
# SPARSEMLA_PDL_WAIT=0: the Gluon attention kernel is launched plainly; by default as a programmatic dependent of the
# stream's previous kernel, waiting for it before it touches memory (GluonKernel.pdl_wait). Session 30 (an H100):
# 1.005-1.030x in 10 of 14 rows (bf16 T=1 H=128 9.55 -> 9.30 us), 0.999-1.002 in 3, 0.984 in one (fp8 NoPE T=16 H=16).
_PDL_WAIT = os.environ.get("SPARSEMLA_PDL_WAIT", "1") != "0"
# SPARSEMLA_COMBINE_TRIGGER=1: the split-K combine kernel lets the stream's next kernel, if that is launched as a
# programmatic dependent (the wait above), start its programs as soon as all of its own have started, not when it ends
# (its TRIGGER). Off by default: session 30 (an H100) found it 1.07x / 1.03x at bf16 T=1 / T=4 H=128 (9.30 -> 8.65 us
# over the wait alone) but 0.94-0.99x in five other rows (fp8 and model1 T=1 H=128, bf16 T=1 H=64, T=16, T=128).
_COMBINE_TRIGGER = os.environ.get("SPARSEMLA_COMBINE_TRIGGER", "0") == "1"
# SPARSEMLA_EXTRA_PARTS=0: a call with an extra cache never runs as two launches and a merge (``PartsLaunch``, each
# part with its own tuned config, the Gluon kernel's where it has one); by default it does where the one Gluon launch
# below does not take it. H200, session 27 (call 3): 1.11-2.56x over one Triton kernel walking both lists.
_EXTRA_PARTS = os.environ.get("SPARSEMLA_EXTRA_PARTS", "1") != "0"
# SPARSEMLA_EXTRA_GLUON=0: never one Gluon launch for a call with an extra cache; by default, on sm90 at T <= 4, a
# call whose caches share a page size and strides runs the Gluon kernel of the main list's tuned entry, the extra
# list's programs as more splits (``extra_gluon``). H200, session 27 (call 3, model1 + 128 extra slots): 1.65-2.28x
# over one Triton kernel and 1.35-1.61x over PartsLaunch at T = 1, 4; at T = 64, 256 PartsLaunch was 1.08-1.29x faster.
_EXTRA_GLUON = os.environ.get("SPARSEMLA_EXTRA_GLUON", "1") != "0"
# SPARSEMLA_PARTS_BF16=0: the Gluon kernels' split-K partials stay float32; by default they are bfloat16
# (``parts_bf16_for``), which adds about a third to the output's relative error (1.7e-3 -> 2.3e-3 on the H200).
_PARTS_BF16 = os.environ.get("SPARSEMLA_PARTS_BF16", "1") != "0"
# SPARSEMLA_RAW_FP8=0: the narrow Gluon kernel with an fp8_e4m3 or fp8_ds_mla cache always dequantizes (group C); by
# default, with 16 heads a program, one split and no extra cache, it runs as the raw-row kernel (``raw_for``,
# GluonKernel.raw; sessions 42 and 43, on an H100: benchmarks/results/session42/README.md, session43/README.md).
_RAW_FP8 = os.environ.get("SPARSEMLA_RAW_FP8", "1") != "0"
# The attention kernel of the latest launch (a CompiledKernel: n_regs, n_spills, metadata.shared),
# for benchmarks that report resources next to timings.
last_compiled = None

# Stands in for a dropped per-call workspace part in a kernel's arguments until the next call binds one (its
# address, 0, keeps the 16-byte alignment the direct launcher was specialized for).
_NO_BUFFER = torch.empty(0)
# The per-call values a launch takes, in TritonLaunch.__call__'s order; an absent optional
# tensor is replaced by q (a pointer the kernel never reads).
_Q, _IDX, _TOPK_LEN, _SINK, _OUT, _LSE, _X_IDX, _X_TOPK_LEN, _SCALE = range(9)


def workspace(device: torch.device, numel: int, stream: int = 0) -> torch.Tensor:
    """A float32 scratch buffer for launches on ``stream`` (a CUDA stream handle; 0 off CUDA) of ``device``,
    reused across calls (grown, never shrunk), so steady-state calls allocate nothing and can be captured in a
    CUDA graph. The SYNC_FLOATS floats before it are the fused combine's counters (gen.gluon.SYNC_FLOATS):
    zeroed when allocated, and every launch that uses them leaves them 0. A replaced buffer is kept
    (``_retired``) for the graphs that captured it; ``release_retired_workspaces`` frees those once no such
    graph will replay."""
    buf = _workspaces.get((device, stream))
    if buf is None or buf.numel() < SYNC_FLOATS + numel:
        size = max(numel, 1)
        if buf is not None:
            _retired.setdefault(device, []).append(buf)
            size = max(size, 2 * (buf.numel() - SYNC_FLOATS))
        buf = kept_buffer(SYNC_FLOATS + size, torch.float32, device, zero=True)
        _workspaces[(device, stream)] = buf
    return buf[SYNC_FLOATS:SYNC_FLOATS + numel]


def release_retired_workspaces() -> int:
    """Free the split-K workspaces that a larger one replaced; returns the bytes released. Safe only when no
    CUDA graph captured while one of them was current will replay (e.g. after such graphs are deleted)."""
    freed = sum(b.numel() * b.element_size() for bufs in _retired.values() for b in bufs)
    _retired.clear()
    return freed


class _Args:
    """One kernel's argument list: fixed values, and slots that each call fills."""

    def __init__(self):
        self.values: list = []
        self.slots: list[tuple[int, int]] = []  # (position, index into the per-call values)

    def fixed(self, *values) -> None:
        self.values.extend(values)

    def per_call(self, which: int, given: bool = True) -> None:
        self.slots.append((len(self.values), which if given else _Q))
        self.values.append(None)

    def filled(self, vals, values: list | None = None) -> list:
        """A copy of ``values`` (default the fixed values) with each slot's per-call value in place."""
        a = (self.values if values is None else values).copy()
        for pos, which in self.slots:
            a[pos] = vals[which]
        return a

    def cache(self, view: KVCacheView, indices: torch.Tensor, idx: int, topk_len: int, has_topk_len: bool):
        self.fixed(*(view.views[v] for v in view.layout.views), view.stride_page, view.stride_row,
                   view.num_slots)
        self.per_call(idx)
        self.fixed(indices.stride(0), indices.stride(1))
        self.per_call(topk_len, has_topk_len)
        self.fixed(view.kv_scale)


def _merge_args(partials: int, out: torch.Tensor, lse: torch.Tensor | None, attn_sink, num_heads: int) -> _Args:
    """The arguments of a kernel that merges split-K partials (sparse_mla_combine, sparse_mla_combine_parts):
    ``partials`` buffer slots left None for the caller to set, then the sink, the output and the LSE."""
    args = _Args()
    args.fixed(*[None] * partials)
    args.per_call(_SINK, attn_sink is not None)
    args.per_call(_OUT)
    args.fixed(out.stride(0), out.stride(1), out.stride(2))
    args.per_call(_LSE, lse is not None)
    args.fixed(*((lse.stride(0), lse.stride(1)) if lse is not None else (0, 0)), num_heads)
    return args


def _cp_async_rows(q: torch.Tensor) -> bool:
    """Whether q's rows can be copied by 16-byte cp.async: unit last stride, 8-element row strides."""
    return q.stride(2) == 1 and q.stride(0) % 8 == 0 and q.stride(1) % 8 == 0 and q.shape[2] % 8 == 0


def _hooked(hook) -> bool:
    """Whether a Triton launch hook is set: not None and, for a HookChain, holding a call."""
    return hook is not None and bool(getattr(hook, "calls", True))


def current_stream():
    """The function that gives a device's current CUDA stream handle, as Triton's launch takes it."""
    from triton.runtime import driver
    return driver.active.get_current_stream


class _Direct:
    """One compiled kernel launched through its launcher (``CompiledKernel.run``), the call
    Triton's ``JITFunction.run`` ends with, from a full argument list in signature order.

    Valid while the per-call tensors keep the 16-byte alignment they were compiled with, the
    current device is the one it was compiled on, and no launch hook is set (profilers that
    set one see every launch through Triton's own path; without one, the launch metadata and
    hooks Triton would pass are unused, so None is passed); otherwise ``__call__`` returns False
    and the caller launches through the JIT, which rebuilds this.
    """

    __slots__ = ("run", "function", "metadata", "grid", "values", "args", "tensor_slots", "aligned",
                 "device", "stream", "knobs")

    def __init__(self, jit_fn, compiled, grid, args: _Args, values: list, constexprs: dict, device: int,
                 reserve: int = 0):
        from triton import knobs
        names = list(inspect.signature(jit_fn.fn).parameters)
        if len(values) + len(constexprs) != len(names) or names[len(values):] != list(constexprs):
            raise TypeError(f"{jit_fn.__name__}: arguments do not match its signature {names}")
        self.run, self.function, self.metadata = compiled.run, compiled.function, compiled.packed_metadata
        if reserve and reserve > compiled.metadata.shared:  # (num_warps, num_ctas, shared), more shared memory
            try:
                if reserve > 48 * 1024:
                    _allow_dynamic_shared(compiled.function, reserve)
                self.metadata = (*self.metadata[:2], reserve)
            except (OSError, AttributeError, RuntimeError):  # no reservation: the launch stays correct
                pass
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.values = values + list(constexprs.values())
        self.args = args
        self.tensor_slots = [pos for pos, _ in args.slots if isinstance(values[pos], torch.Tensor)]
        self.aligned = [values[pos].data_ptr() % 16 == 0 for pos in self.tensor_slots]
        self.device, self.stream, self.knobs = device, current_stream(), knobs.runtime

    def __call__(self, vals) -> bool:
        if _hooked(self.knobs.launch_enter_hook) or _hooked(self.knobs.launch_exit_hook) \
                or torch.cuda.current_device() != self.device:
            return False
        a = self.args.filled(vals, self.values)
        for pos, aligned in zip(self.tensor_slots, self.aligned):
            if (a[pos].data_ptr() % 16 == 0) != aligned:
                return False
        g = self.grid
        self.run(g[0], g[1], g[2], self.stream(self.device), self.function, self.metadata, None, None, None, *a)
        return True


class _Kernel:
    """One kernel of a prepared launch: its JIT function, grid, arguments and constexprs."""

    def __init__(self, jit_fn, grid, args: _Args, constexprs: dict, options: dict, device: torch.device):
        self.jit_fn, self.grid, self.args, self.constexprs = jit_fn, grid, args, constexprs
        self.kw = {**constexprs, **COMPILE_OPTIONS, **options}
        self.proxy = jit_fn[grid]  # grid and proxy made once
        self.device = device
        self.direct = None
        self.reserve = 0  # shared memory bytes each program reserves (direct launches only)

    def __call__(self, vals):
        if self.direct is not None and self.direct(vals):
            return None
        a = self.args.filled(vals)
        compiled = self.proxy(*a, **self.kw)
        if _DIRECT and self.device.type == "cuda" and hasattr(compiled, "packed_metadata"):  # not the interpreter
            try:
                self.direct = _Direct(self.jit_fn, compiled, self.grid, self.args, a, self.constexprs,
                                      self.device.index if self.device.index is not None
                                      else torch.cuda.current_device(), self.reserve)
            except Exception:  # a Triton whose launcher differs: keep launching through the JIT
                self.direct = None
        return compiled

    def set_fixed(self, pos: int, value: torch.Tensor) -> None:
        """Replace the fixed tensor argument at ``pos`` (a workspace part): in the direct launch's argument list
        too where it keeps its 16-byte alignment (the kernel was specialized for it), else that is rebuilt."""
        old, self.args.values[pos] = self.args.values[pos], value
        if self.direct is not None:
            if isinstance(old, torch.Tensor) and old.data_ptr() % 16 == value.data_ptr() % 16:
                self.direct.values[pos] = value
            else:
                self.direct = None


def combine_columns(splits: int, d_v: int) -> int:
    """Output columns per combine program (its grid: tokens x heads x d_v / this): its [splits x columns]
    tile of partials stays at 8K floats."""
    return max(16, min(d_v, 8192 // next_pow2(splits)))


def combine_warps(block_dv: int, parts_bf16: bool) -> int:
    """The combine kernel's warps: 4, or with bfloat16 partials one per 256 columns (128 words, 4 a thread), at most
    4, so each thread holds every split of its columns and sums them without shared memory (with 4 warps Triton
    spread the splits over warps: 20 shared stores and 4-byte output stores at 16 splits, Triton 3.6)."""
    return max(1, min(4, block_dv // 256)) if parts_bf16 else 4


def _pdl(config: Config, grid: int, combine_grid: int, device: torch.device) -> bool:
    """Whether the combine kernel (``combine_grid`` programs) is launched as a programmatic dependent (PDL,
    sm90 and later) of the attention kernel (``grid`` programs): for a Gluon kernel (which lets it launch
    at once) whose grid takes at most half the SMs, so the combine's programs start on the SMs left free
    and wait there for the partials, or whose grid fits one wave with at most 4 splits (a light combine
    behind long programs) or with a combine of one program per SM. H200, session 20
    (benchmarks/results/session20/README.md, calls 4 and 7): 1.02-1.10x in all 16 suite rows (T = 1, 4)
    with grids of 32-64 programs; with 128 programs 1.01-1.03x with 4 splits (T = 16, six rows, twice),
    0.99-1.02x with 2 (22 rows, +0.7% on average), but 0.75-0.98x with 8-32 splits: the combine's programs
    launched early crowd onto the few SMs left free, as many as fit, then read 8-32 partials there. Session
    23 (benchmarks/results/session23/README.md, call 2): with their shared memory reserved so that one fits
    per SM (``_combine_reserve``), a combine of 128 programs behind 128 programs of 16 splits is 1.06-1.08x
    (bf16 T=1 H=128 10.06 -> 9.34 us); with 1024-2048 combine programs (T=16, 8 splits) PDL stays slower.
    Session 16 had found grids of two waves slower still."""
    if not (_PDL and config.gluon and device.type == "cuda") or interpreting():
        return False
    props = torch.cuda.get_device_properties(device)
    return props.major >= 9 and pdl_for(config, grid, combine_grid, props.multi_processor_count)


def pdl_for(config: Config, grid: int, combine_grid: int, sms: int) -> bool:
    """``_pdl``'s rule on an sm90+ GPU of ``sms`` SMs (what benchmarks/compile_report.py compiles)."""
    return _PDL and config.gluon and (2 * grid <= sms or (grid <= sms and (config.num_splits <= 4
                                                                            or combine_grid <= sms)))


def _combine_reserve(pdl: bool, grid: int, combine_grid: int, device: torch.device) -> int:
    """Bytes of shared memory each combine program reserves (0: only what it uses). Its programs are light,
    so behind PDL the ones launched early pack onto the SMs the attention grid (``grid`` programs) leaves
    free, as many as fit, and then merge their partials there. Where they outnumber the free SMs and the
    combine's grid needs at most 2 programs per SM, each reserves a share of an SM's shared memory so that
    only that many fit: the early ones take the free SMs and the rest start where the attention programs
    leave. H200, session 23 (benchmarks/results/session23/README.md, calls 2 and 3): one per SM 1.06-1.08x
    behind 128-program grids (with PDL, which loses without it); two per SM (256 combine programs behind 64)
    1.02x at T=1 H=128 (fp8, model1), at T=4 H=64 as fast or faster in five formats and 0.98x with bf16; one
    per SM for 256 programs (two rounds) 0.92x, and reserving anything for 512-2048 combine programs
    0.85-1.00x; where the free SMs could take every combine program, 0.94-1.00x."""
    if not pdl:
        return 0
    props = torch.cuda.get_device_properties(device)
    sms = props.multi_processor_count
    per_sm = -(-combine_grid // sms)
    if combine_grid <= sms - grid or per_sm > 2:
        return 0
    return props.shared_memory_per_multiprocessor // (per_sm + 1)


def _parts_first(combine_grid: int, device: torch.device) -> bool:
    """Whether the combine kernel takes PARTS_FIRST (its partials' and LSEs' loads issued together as volatile
    loads, one L2 round trip instead of two: after the LSEs' loads, ptxas otherwise holds the partials' behind
    the LSEs' max): where its grid (``combine_grid`` programs) has at most one program per SM, so each merge is
    one program's latency. H200, session 24 (benchmarks/results/session24/README.md, call 1): with 32-128
    programs 0.997-1.085x in 20 rows (T = 1, 4; bf16 T=1 H=16 8.10 -> 7.47 us), with 256-512 programs
    0.973-0.984x in all 8 rows. Only where it was measured, sm90; under the interpreter it is off (tests pass
    PARTS_FIRST themselves)."""
    if not _PARTS_FIRST or device.type != "cuda" or interpreting():
        return False
    props = torch.cuda.get_device_properties(device)
    return props.major == 9 and combine_grid <= props.multi_processor_count


def _combine_trigger(device: torch.device) -> bool:
    """The combine kernel's TRIGGER (``SPARSEMLA_COMBINE_TRIGGER=1``, on a GPU: griddepcontrol.launch_dependents)."""
    return _COMBINE_TRIGGER and device.type == "cuda" and not interpreting()


def _persistent(spec: KernelSpec, config: Config, units: int, device: torch.device) -> bool:
    """``persistent_for`` on ``device`` (a CUDA GPU; never under the interpreter)."""
    if device.type != "cuda" or interpreting():
        return False
    return persistent_for(spec, config, units, torch.cuda.get_device_properties(device).multi_processor_count)


def persistent_for(spec: KernelSpec, config: Config, units: int, sms: int) -> bool:
    """Whether the attention kernel runs as the Gluon template's persistent variant (one program per SM looping
    over the ``units`` (token, head block, split); the next unit's tile 0 and Q load under the current unit's
    tail) on a GPU of ``sms`` SMs: for the wide kernel with a bf16 cache and no split-K, where the units fill at
    least 16 rounds of the SMs with rope (d_qk 576), 48 without. H200, session 24
    (benchmarks/results/session24/README.md): with rope at 4096 and 8192 units (prefill T=4096, H=64 and 128)
    1.031-1.038x in call 3, and in the suite's bench against the non-persistent kernel in the same call
    1.006-1.011x (H=64) and 1.04-1.10x (H=128) in call 4; at 256-512 units 0.98-1.01x (calls 3, 6); without rope
    0.96-1.01x with direct stores. Session 27 (benchmarks/results/session27/README.md, call 1, rotated orders),
    both writing through a stage (``_staged_out``): with rope 1.055x at 8192 units and 1.003x at 4096 against the
    staged non-persistent kernel; without rope 1.028x at 8192 units, 0.987x at 4096."""
    return (_PERSISTENT and config.gluon and config.block_h == 64 and config.num_splits == 1
            and spec.kv_format == "auto" and units >= (16 if spec.d_qk == 576 else 48) * sms)


def _staged_out(config: Config, persistent: bool) -> bool:
    """Whether the wide Gluon kernel's group A writes its output through a stage (GluonKernel.staged_out): without
    split-K (partials keep the direct stores); the persistent kernel through the last tile's stage. H200, session
    24 (benchmarks/results/session24/README.md, call 8): 1.025-1.087x in all 10 rows timed (bf16, NoPE and
    fp8_e4m3; T = 64-4096), ABBA order. Session 27 (call 1, benchmarks/calls/prefill_out.py): the persistent
    kernel staged against its direct stores 1.028-1.051x in all four prefill rows (bf16 and NoPE, H = 64, 128)."""
    return _STAGED_OUT and config.gluon and config.block_h == 64 and config.num_splits == 1


def tail_split_for(num_tokens: int, head_blocks: int, tiles: int, sms: int) -> tuple[int, int] | None:
    """(whole tokens, splits) where the persistent kernel (GluonKernel.tail_split) should split its last round's
    units, else None: its ``num_tokens x head_blocks`` units of ``tiles`` tiles each fill whole rounds of ``sms``
    programs and then a part of one, where the few SMs running a last whole unit hold up the call (bf16 prefill
    T=4096 H=128 on 132 SMs: 62 rounds, then 8 units, ~1.5% of the call). The tokens after the whole rounds are
    split so their pieces fill one round (at most 16 ways, for the combine), and a combine kernel merges them."""
    units = num_tokens * head_blocks
    whole_tokens = units // sms * sms // head_blocks
    tail_units = units - whole_tokens * head_blocks
    if not tail_units:
        return None
    splits = min(sms // tail_units, tiles, 16)
    return (whole_tokens, splits) if splits >= 2 else None


def _tiles(spec: KernelSpec, config: Config) -> int:
    """The tiles of one program's share of a full top-k list."""
    return -(-spec.topk // (config.num_splits * config.block_n))


def _tail(spec: KernelSpec, config: Config, num_tokens: int, sms: int, persistent: bool,
          staged_out: bool) -> tuple[int, int] | None:
    """``tail_split_for`` of a launch (None where the kernel is not persistent and staged, or SPARSEMLA_TAIL_SPLIT=0)."""
    if not (_TAIL_SPLIT and persistent and staged_out):
        return None
    return tail_split_for(num_tokens, -(-spec.num_heads // config.block_h), _tiles(spec, config), sms)


def raw_for(spec: KernelSpec, config: Config, splits: int) -> bool:
    """Whether a Gluon ``config`` launched with ``splits`` splits (extra ones included) runs as the raw-row kernel
    (GluonKernel.raw): an fp8_e4m3 or fp8_ds_mla cache (gen/gluon.RAW_FORMATS) without an extra one, 16 heads a
    program, one split."""
    return (_RAW_FP8 and config.gluon and config.block_h == 16 and spec.kv_format in RAW_FORMATS and splits == 1
            and not spec.extra_topk)


def gluon_fields(spec: KernelSpec, config: Config, units: int, sms: int) -> dict:
    """The GluonKernel fields beyond ``GluonKernel.for_config``'s that the runtime sets for a Gluon ``config``
    running ``units`` (token, head block, split) on a GPU of ``sms`` SMs, those that are on (the launch below
    asks the same rules of its device): what benchmarks/compile_report.py and ptx_same.py compile for a
    table's entries."""
    persistent = persistent_for(spec, config, units, sms)
    staged_out = _staged_out(config, persistent)
    head_blocks = -(-spec.num_heads // config.block_h)
    tail = _tail(spec, config, units // head_blocks, sms, persistent, staged_out)
    parts_bf16 = parts_bf16_for(config, units // (head_blocks * config.num_splits), spec.num_heads)
    return {name: True for name, on in (("persistent", persistent), ("staged_out", staged_out),
                                        ("tail_split", bool(tail)), ("pdl_wait", _PDL_WAIT and config.gluon),
                                        ("parts_bf16", parts_bf16), ("raw", raw_for(spec, config, config.num_splits)))
            if on}


def _allow_dynamic_shared(function: int, nbytes: int) -> None:
    """Let a compiled kernel launch with ``nbytes`` of dynamic shared memory (above 48 KB it must opt in)."""
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    rc = lib.cuFuncSetAttribute(ctypes.c_void_p(function), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                ctypes.c_int(nbytes))
    if rc != 0:
        raise RuntimeError(f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {nbytes}) failed: CUresult {rc}")


def _fused(config: Config, T: int, num_heads: int) -> bool:
    """Whether a Gluon kernel merges its split-K partials itself (the template's FUSED: the last split of
    each token and head block to finish merges the others' partials with its own accumulator, so there is
    no combine kernel, and the last split's partial is never written): for programs of 64 heads, none
    masked, with 2 splits, while the counters of the token and head blocks (4 floats each) fit in
    SYNC_FLOATS. H200, session 21 (benchmarks/results/session21/README.md, calls 2 and 4): 1.01-1.05x in 10
    of the 11 such suite rows (T=32 H=128, T=64 H=64; fp8 NoPE T=64 H=64 0.99x); 0.93x with 32 heads in a
    64-head program; with 2 splits of 16- and 32-head programs 0.96-0.99x, with 4 splits 0.92x, with 8-16
    splits 0.31-0.94x (one program reads 3-15 partials of the others while the rest of the grid has
    finished)."""
    return fused_for(config, T, num_heads) and not interpreting()


def fused_for(config: Config, T: int, num_heads: int) -> bool:
    """``_fused``'s rule (what benchmarks/compile_report.py compiles)."""
    return (_FUSED and config.gluon and config.block_h == 64 and num_heads % 64 == 0 and config.num_splits == 2
            and 4 * T * (num_heads // 64) <= SYNC_FLOATS)


def parts_bf16_for(config: Config, T: int, num_heads: int) -> bool:
    """Whether a launch of ``config`` for ``T`` tokens and ``num_heads`` heads writes bfloat16 split-K partials
    (GluonKernel.parts_bf16, the combine's PARTS_BF16): a Gluon kernel's, narrow or wide, where the combine kernel
    merges them (TritonLaunch: not an extra cache's list, not a PartsLaunch part; never FUSED, whose merge reads
    float32 partials; a persistent kernel, a tail split too, has one split in its config), unless
    ``SPARSEMLA_PARTS_BF16=0``.
    Session 35 (benchmarks/results/session35/README.md): the partials' bytes, not their store instructions, cost the
    T=1 rows ~1 us (an H100); on the H200 bfloat16 partials were 1.01-1.07x in all 13 rows timed (bf16 T=1 H=128
    9.11 -> 8.64 us), relative errors 1.7e-3 -> 2.3e-3. Session 36 (call 1, an H100): the wide kernel's (64-head
    programs, ``_write_rows_bf16``) 1.05-1.21x in all 12 rows timed (bf16 T=16 H=64 30.72 -> 25.73 us)."""
    return (_PARTS_BF16 and config.gluon and config.num_splits > 1 and not fused_for(config, T, num_heads))


def launch_constexprs(spec: KernelSpec, config: Config, T: int, sms: int) -> dict:
    """The PDL and FUSED constexprs TritonLaunch compiles a Gluon ``config`` with for ``T`` tokens on an sm90 GPU of
    ``sms`` SMs, as ``compile_module``'s ``pdl`` and ``fused`` arguments (benchmarks/compile_report.py and
    ptx_same.py compile what runs)."""
    S, grid = config.num_splits, T * -(-spec.num_heads // config.block_h) * config.num_splits
    fused = S > 1 and fused_for(config, T, spec.num_heads)
    combine_grid = T * spec.num_heads * (spec.d_v // combine_columns(S, spec.d_v))
    pdl = S > 1 and not fused and pdl_for(config, grid, combine_grid, sms)
    return dict(pdl=pdl, fused=S if fused else 0)


class TritonLaunch:
    """``run_triton`` for one argument signature, prepared once and called per call.

    Built from example arguments: only their shapes, strides, dtypes and devices (and the
    cache views themselves) are kept, never the per-call tensors. A call must pass tensors
    of the same signature, and None exactly where the example had None.

    With ``partials_at`` (a float offset into the workspace) the kernel writes split-K partials there, also
    with one split, and nothing merges them: ``PartsLaunch`` runs two such launches and merges both.
    """

    def __init__(self, spec: KernelSpec, config: Config, q: torch.Tensor, view: KVCacheView,
                 indices: torch.Tensor, out: torch.Tensor, lse: torch.Tensor | None, *, topk_length=None,
                 attn_sink=None, extra_view: KVCacheView | None = None, extra_indices=None,
                 extra_topk_length=None, partials_at: int | None = None):
        mod = load_module(spec)
        T, H, _ = q.shape
        self.fwd = self.combine = None
        self.gluon = config.gluon
        self.ws_numel = 0
        if T == 0:
            return
        S = config.num_splits
        # A Gluon launch with an extra cache: the extra list's programs are x_splits more splits of the grid.
        x_splits = extra_splits(spec, config) if config.gluon and extra_view is not None else 0
        if x_splits:
            problem = gluon_extra_problem(view, extra_view, indices, extra_indices)
            if problem:
                raise ValueError(f"Config.gluon=True for {spec.key}: {problem} (Config.gluon=False runs it)")
            S += x_splits
        split_k = S > 1 or partials_at is not None
        self.ws_at = partials_at or 0
        self.part = partials_at is not None  # one of a PartsLaunch's two launches
        self.device = q.device
        # The stream a call runs on picks its workspace (``_bind_workspace``): Triton's handle of it.
        self.stream_fn = current_stream() if q.device.type == "cuda" else None
        self.ws_buf = self.ws_stream = None
        # Held from binding the workspace to launching: threads keep their own current streams, and another
        # thread's binding between this one's and its launch would hand it that stream's workspace.
        self.lock = threading.Lock()
        lse_strides = (lse.stride(0), lse.stride(1)) if lse is not None else (0, 0)

        # The Gluon kernel copies Q by cp.async, 16 bytes at a time: its rows need a unit last stride and
        # 16-byte aligned starts. A q without them is copied into a tensor that has them, per call.
        self.q_strides = None
        if config.gluon and not _cp_async_rows(q):
            self.q_strides = (H * q.shape[2], q.shape[2], 1)
        fwd = _Args()
        fwd.per_call(_Q)
        fwd.fixed(*(self.q_strides or q.stride()))
        fwd.cache(view, indices, _IDX, _TOPK_LEN, topk_length is not None)
        flags = [topk_length is not None]
        if extra_view is not None:
            fwd.cache(extra_view, extra_indices, _X_IDX, _X_TOPK_LEN, extra_topk_length is not None)
            flags.append(extra_topk_length is not None)
        fwd.per_call(_SINK, attn_sink is not None)
        fwd.per_call(_OUT)
        fwd.fixed(out.stride(0), out.stride(1), out.stride(2))
        fwd.per_call(_LSE, lse is not None)
        fwd.fixed(*lse_strides)
        head_blocks = -(-H // config.block_h)
        grid = T * head_blocks * S
        merged = S > 1 and partials_at is None  # by a combine here, or in the kernel (FUSED)
        fused = merged and not x_splits and _fused(config, T, H)
        persistent = partials_at is None and not x_splits and _persistent(spec, config, grid, q.device)
        staged_out = not split_k and _staged_out(config, persistent)
        # The persistent kernel's last round split (GluonKernel.tail_split): tokens from tail_t0 on run as S splits
        # whose partials the combine merges into out[tail_t0:]; the kernel takes S as its num_splits.
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count if persistent else 0
        tail = _tail(spec, config, T, sms, persistent, staged_out)
        self.tail_t0 = None
        parts_t = T  # the tokens with partials
        if tail:
            self.tail_t0, S = tail
            parts_t = T - self.tail_t0
            grid = self.tail_t0 * head_blocks + parts_t * head_blocks * S  # the units
        block_dv = combine_columns(S, spec.d_v)
        combine_grid = parts_t * H * (spec.d_v // block_dv)
        pdl = merged and not fused and _pdl(config, grid, combine_grid, q.device)
        self.fused = fused
        self.parts_bf16 = merged and not x_splits and parts_bf16_for(config, T, H)
        # The workspace: o_part (split-K, tail split), lse_part (the same; its place also locates the
        # P_EXCHANGE scratch, which the kernel finds after it, 128-byte aligned); an unused
        # part's argument is q (never read).
        self.o_numel = parts_t * H * S * spec.d_v // (2 if self.parts_bf16 else 1) if split_k or tail else 0  # floats
        self.lse_numel = parts_t * H * S if split_k or tail or config.p_exchange else 0
        x_numel = grid * mod.xchg_numel(config.block_h, config.block_n) if config.p_exchange else 0
        self.ws_numel = self.o_numel + (-(-self.lse_numel // 32) * 32 + x_numel if x_numel else self.lse_numel)
        self.ws_pos = len(fwd.values)
        for used in (split_k or tail, split_k or tail or config.p_exchange):
            if used:
                fwd.fixed(None)  # set by _bind_workspace
            else:
                fwd.per_call(_Q)
        fwd.per_call(_SCALE)
        # (the persistent kernel: its unit count, then with a tail split its whole units)
        fwd.fixed(H, S, *([grid] if persistent else []), *([self.tail_t0 * head_blocks] if tail else []), *flags)
        if config.gluon:  # same arguments; its tiling is fixed in its module
            if interpreting():
                raise ValueError(f"Config.gluon=True for {spec.key}: the Gluon kernel runs on an sm90 GPU, "
                                 "not under TRITON_INTERPRET")
            gmod = load_module(GluonKernel.for_config(spec, config, persistent=persistent, staged_out=staged_out,
                                                      tail_split=bool(tail), pdl_wait=_PDL_WAIT,
                                                      parts_bf16=self.parts_bf16,
                                                      raw=not split_k and raw_for(spec, config, S)))
            programs = min(grid, sms) if persistent else grid
            self.fwd = _Kernel(gmod.sparse_mla_fwd_gluon, (programs,), fwd,
                               dict(SPLIT_K=split_k, PDL=pdl, FUSED=S if fused else 0,
                                    **({"X_SPLITS": x_splits} if x_splits else {})),
                               gluon_launch_options(gmod), q.device)
        else:
            self.fwd = _Kernel(mod.sparse_mla_fwd, (grid,), fwd,
                               dict(BLOCK_H=config.block_h, BLOCK_N=config.block_n, SPLIT_K=split_k,
                                    INDEX_PREFETCH=config.index_prefetch, P_EXCHANGE=config.p_exchange,
                                    L2_PREFETCH=config.l2_prefetch),
                               dict(num_warps=config.num_warps, num_stages=config.num_stages), q.device)
        if (merged and not fused) or tail:
            self._combine_kernel(mod, spec, parts_t, H, S, block_dv, out, lse, attn_sink, pdl,
                                 _parts_first(combine_grid, q.device))
            self.combine.reserve = _combine_reserve(pdl, grid, combine_grid, q.device)

    def _combine_kernel(self, mod, spec, T, H, S, block_dv, out, lse, attn_sink, pdl: bool,
                        parts_first: bool) -> None:
        comb = _merge_args(2, out, lse, attn_sink, H)  # o_part, lse_part: set by _bind_workspace
        s_p2 = next_pow2(S)
        self.combine = _Kernel(mod.sparse_mla_combine, (T * H, spec.d_v // block_dv), comb,
                               dict(NUM_SPLITS=S, SPLITS_P2=s_p2, BLOCK_DV=block_dv, PDL=pdl,
                                    PARTS_FIRST=parts_first, TRIGGER=_combine_trigger(self.device),
                                    PARTS_BF16=self.parts_bf16),
                               dict(num_warps=combine_warps(block_dv, self.parts_bf16), **({"launch_pdl": True} if pdl
                                                                                           else {})), self.device)

    def _bind_workspace(self, stream: int) -> None:
        """Point the workspace arguments at ``stream``'s workspace (again after a launch grew it, or when the
        call runs on another stream). While a CUDA graph is captured on a stream without a workspace large
        enough, the partials go to a buffer of this call's own, from the graph's memory pool like any
        operator's output: a shared one allocated there would have its counters zeroed only when that graph
        replays, and another graph captured on the stream could replay first."""
        need = self.ws_at + self.ws_numel
        buf = _workspaces.get((self.device, stream))
        if (buf is None or buf.numel() < SYNC_FLOATS + need) and capturing(self.device):
            report_capture_buffers("a split-K workspace large enough")
            buf = torch.empty(SYNC_FLOATS + self.ws_numel, dtype=torch.float32, device=self.device)
            if self.fused:
                buf[:SYNC_FLOATS].zero_()  # (a memset node in the graph)
            ws, self.ws_stream = buf[SYNC_FLOATS:], None  # (bound again on the next call)
        else:
            ws = workspace(self.device, need, stream)[self.ws_at:]
            buf, self.ws_stream = _workspaces[(self.device, stream)], stream
        self.ws_buf = buf
        self.parts = parts = [ws[:self.o_numel], ws[self.o_numel:]]  # lse_part runs on into the scratch
        for i, n in enumerate((self.o_numel, self.lse_numel)):
            if n:
                self.fwd.set_fixed(self.ws_pos + i, parts[i])
        if self.combine is not None:
            for i in (0, 1):
                self.combine.set_fixed(i, parts[i])

    def __call__(self, q: torch.Tensor, indices: torch.Tensor, sm_scale: float, out: torch.Tensor,
                 lse: torch.Tensor | None = None, topk_length=None, attn_sink=None, extra_indices=None,
                 extra_topk_length=None) -> None:
        if self.fwd is None:  # no query tokens
            return
        if not self.ws_numel:
            self._launch(q, indices, sm_scale, out, lse, topk_length, attn_sink, extra_indices, extra_topk_length)
            return
        with self.lock:
            stream = self.stream_fn(self.device.index) if self.stream_fn is not None else 0
            if stream != self.ws_stream or _workspaces.get((self.device, stream)) is not self.ws_buf:
                self._bind_workspace(stream)
            self._launch(q, indices, sm_scale, out, lse, topk_length, attn_sink, extra_indices, extra_topk_length)
            if self.ws_stream is None and not self.part:  # (a PartsLaunch drops its parts' after its merge)
                self.drop_call_buffer()

    def drop_call_buffer(self) -> None:
        """Forget the buffer of a captured call's own (see ``_bind_workspace``) once it is launched, so no reference
        to it outlives the call: torch.compile's CUDA-graph trees (mode="reduce-overhead") capture on a stream of
        their own and refuse a tensor in their pool that outlives the call without being one of its outputs
        (H200, session 28 call 1: "tensor(s) in the cudagraph pool not tracked as outputs"). The next call binds
        a workspace again (``ws_stream`` is None)."""
        for i, n in enumerate((self.o_numel, self.lse_numel)):
            if n:
                self.fwd.set_fixed(self.ws_pos + i, _NO_BUFFER)
        if self.combine is not None:
            for i in (0, 1):
                self.combine.set_fixed(i, _NO_BUFFER)
        self.ws_buf = self.parts = None

    def _launch(self, q, indices, sm_scale, out, lse, topk_length, attn_sink, extra_indices, extra_topk_length):
        if self.q_strides is not None or (self.gluon and q.data_ptr() % 16):
            q = torch.empty_strided(q.shape, self.q_strides or q.stride(), dtype=q.dtype, device=q.device).copy_(q)
        vals = (q, indices, topk_length, attn_sink, out, lse, extra_indices, extra_topk_length, sm_scale)
        compiled = self.fwd(vals)
        if compiled is not None:
            global last_compiled
            last_compiled = compiled
        if self.combine is not None:
            if self.tail_t0 is not None:  # the tail tokens' rows (the combine's rows count from the first)
                vals = (*vals[:_OUT], out[self.tail_t0:], None if lse is None else lse[self.tail_t0:], *vals[_LSE + 1:])
            self.combine(vals)


def gluon_extra_problem(view: KVCacheView, extra_view: KVCacheView, indices: torch.Tensor,
                        extra_indices: torch.Tensor) -> str:
    """Why the Gluon kernel cannot walk this extra cache ("" if it can): its programs keep the main cache's page,
    row and index-column strides (kernel parameters; the loading groups have no registers for per-program ones)."""
    if (extra_view.stride_page, extra_view.stride_row) != (view.stride_page, view.stride_row):
        return (f"extra_kv_cache's page and row strides {(extra_view.stride_page, extra_view.stride_row)} differ from "
                f"kv_cache's {(view.stride_page, view.stride_row)}")
    if extra_indices.stride(1) != indices.stride(1):
        return f"extra_indices' column stride {extra_indices.stride(1)} differs from indices' {indices.stride(1)}"
    return ""


def extra_gluon(spec: KernelSpec, num_tokens: int) -> bool:
    """Whether a call of ``num_tokens`` with an extra cache runs the Gluon kernel of its main list's tuned entry, the
    extra list's programs as more splits: at most 4 tokens (see ``_EXTRA_GLUON``; ``SPARSEMLA_EXTRA_GLUON=0`` turns
    it off)."""
    from sparsemla.gen.gluon import unsupported
    return _EXTRA_GLUON and spec.extra_topk > 0 and num_tokens <= 4 and not unsupported(spec)


def part_specs(spec: KernelSpec) -> tuple[KernelSpec, KernelSpec]:
    """A call with an extra cache as two calls without one: the main cache's list, then the extra cache's (its
    length and page size), both without the sink and the LSE output, which the merge applies."""
    main = replace(spec, extra_topk=0, extra_page_size=1, has_sink=False, return_lse=False)
    return main, replace(main, topk=spec.extra_topk, page_size=spec.extra_page_size)


def extra_parts(spec: KernelSpec) -> bool:
    """Whether a call with an extra cache runs as ``PartsLaunch`` where ``extra_gluon`` does not take it (see
    ``_EXTRA_PARTS``; ``SPARSEMLA_EXTRA_PARTS=0`` turns it off)."""
    return _EXTRA_PARTS and spec.extra_topk > 0


class PartsLaunch:
    """A call with an extra cache (e.g. DeepSeek-V4's SWA beside its compressed cache) as two launches, one per
    cache, each writing split-K partials into the workspace, then one combine that merges both sets as the
    splits of one list (the spec's ``sparse_mla_combine_parts``, which adds the sink and writes the LSE). Each
    part is a call of one cache, so it can run the Gluon kernel (which walks one list) with its own tuned
    config; the monolithic kernel with both lists is the Triton one. Called like ``TritonLaunch``."""

    def __init__(self, spec: KernelSpec, configs: tuple[Config, Config], q: torch.Tensor, view: KVCacheView,
                 indices: torch.Tensor, out: torch.Tensor, lse: torch.Tensor | None, *, topk_length=None,
                 attn_sink=None, extra_view: KVCacheView, extra_indices: torch.Tensor, extra_topk_length=None):
        (main_spec, x_spec), (main_cfg, x_cfg) = part_specs(spec), configs
        self.main = TritonLaunch(main_spec, main_cfg, q, view, indices, out, None, topk_length=topk_length,
                                 partials_at=0)
        self.extra = TritonLaunch(x_spec, x_cfg, q, extra_view, extra_indices, out, None,
                                  topk_length=extra_topk_length, partials_at=-(-self.main.ws_numel // 32) * 32)
        self.combine = None
        self.lock = threading.Lock()  # (from the parts' launches to the merge: see TritonLaunch.lock)
        T, H, _ = q.shape
        if T == 0:
            return
        S, XS = main_cfg.num_splits, x_cfg.num_splits
        block_dv = combine_columns(S + XS, spec.d_v)
        comb = _merge_args(4, out, lse, attn_sink, H)  # both parts' partials: set per call
        self.combine = _Kernel(load_module(spec).sparse_mla_combine_parts, (T * H, spec.d_v // block_dv), comb,
                               dict(SPLITS=S, X_SPLITS=XS, SPLITS_P2=next_pow2(S + XS), BLOCK_DV=block_dv),
                               dict(num_warps=4), q.device)

    def __call__(self, q: torch.Tensor, indices: torch.Tensor, sm_scale: float, out: torch.Tensor,
                 lse: torch.Tensor | None = None, topk_length=None, attn_sink=None, extra_indices=None,
                 extra_topk_length=None) -> None:
        if self.combine is None:  # no query tokens
            return
        with self.lock:
            self.main(q, indices, sm_scale, out, None, topk_length)
            self.extra(q, extra_indices, sm_scale, out, None, extra_topk_length)
            parts = [*self.main.parts, *self.extra.parts]  # (each part re-points at its stream's workspace)
            for i, part in enumerate(parts):
                if self.combine.args.values[i] is not part:
                    self.combine.set_fixed(i, part)
            self.combine((q, indices, topk_length, attn_sink, out, lse, extra_indices, extra_topk_length, sm_scale))
            if self.main.ws_stream is None or self.extra.ws_stream is None:  # captured with buffers of their own
                for i in range(len(parts)):
                    self.combine.set_fixed(i, _NO_BUFFER)
                self.main.drop_call_buffer()
                self.extra.drop_call_buffer()


def run_triton(spec: KernelSpec, config: Config, q: torch.Tensor, view: KVCacheView,
               indices: torch.Tensor, sm_scale: float, out: torch.Tensor, lse: torch.Tensor | None,
               *, topk_length=None, attn_sink=None, extra_view: KVCacheView | None = None,
               extra_indices=None, extra_topk_length=None) -> None:
    """Write attention for ``q`` into ``out`` (and ``lse``); inputs are already validated."""
    TritonLaunch(spec, config, q, view, indices, out, lse, topk_length=topk_length, attn_sink=attn_sink,
                 extra_view=extra_view, extra_indices=extra_indices, extra_topk_length=extra_topk_length)(
        q, indices, sm_scale, out, lse, topk_length, attn_sink, extra_indices, extra_topk_length)
