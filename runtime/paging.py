"""Page and index kernels around attention: ``convert_indices``, ``pack_valid_prefix``, ``page_split``.

CUDA tensors run the generated Triton kernels; CPU tensors run them under TRITON_INTERPRET=1
and otherwise fall back to the PyTorch references below (which the tests compare against).
The CUDA paths never read device values on the host (no sync), so they can be captured in a
CUDA graph; only ``pack_valid_prefix`` without ``out=`` reads the output length.
"""
from __future__ import annotations

from functools import lru_cache

import torch

from sparsemla.gen.layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES, model1_page_bytes
from sparsemla.gen.paging import (COMPACT_BLOCK, MARK_BLOCK, TMA_ROW_BYTES, ConvertIndicesSpec, PackValidPrefixSpec,
                                  PageSplitSpec, PageSplitTma, PagingConfig, check_path, default_config_for,
                                  tma_layout)
from sparsemla.gen.paging_table import entry_key
from sparsemla.gen.paging_table import load_tables as load_paging_tables
from sparsemla.gen.render import COMPILE_OPTIONS, interpreting, load_module
from sparsemla.gen.tuned_table import bucket_for

from .api import device_arch
from .device_guard import on_tensor_device
from .dispatch import report_reference, table_gpus
from .launch import capturing, kept_buffer, launch, report_capture_buffers, stream_key

_PAGE_DTYPES = (torch.uint8, torch.float8_e4m3fn)
_split_buffers: dict = {}  # (device, buffer_tag) -> persistent page_split output
# (device, stream handle) -> _PageList (grown, never shrunk): calls on two streams may run at once, and a
# shared state would mix their marks and lists.
_list_buffers: dict = {}
# States a larger one replaced, per device: never freed, since a CUDA graph captured with one replays into it
# (see triton_backend._retired); growth at least doubles. release_retired_lists frees them.
_retired_lists: dict = {}
_sm_counts: dict = {}  # device -> multiprocessor count
_lead_compiled: set = set()  # (device, PagingConfig) whose lead path ran once eagerly (its kernels are built)
_tma_compiled: set = set()  # (device, PagingConfig) whose TMA copy ran once eagerly


def _use_kernels(dev: torch.device) -> bool:
    return dev.type == "cuda" or interpreting()


def _check(name, t, *, dtypes, ndim, device=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        raise ValueError(f"{name}: dtype {t.dtype}, expected {' or '.join(map(str, dtypes))}")
    if ndim is not None and t.ndim != ndim:
        raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {ndim} dims")
    if device is not None and t.device != device:
        raise ValueError(f"{name}: on {t.device}, expected {device} (the device of the other inputs)")


def _config(spec, path: str, config, device, size: int) -> PagingConfig:
    """``config`` validated for ``spec``, or with None the tuned config of ``spec``'s kernel ``path`` for a
    call of ``size`` (rows, source pages or ids: ``gen.paging.PATHS``) on ``device``'s GPU, else the arch's
    default. Cached: it runs on every call (1.5-2 us of the 11-19 us of Python a call took on the CPU machine)."""
    if config is None:
        buckets, configs = _tuned_path(spec, path, device)
        return configs[bucket_for(size, buckets)] if buckets else _default_config(spec, path)
    if not isinstance(config, PagingConfig):
        raise TypeError(f"config: expected a PagingConfig or None, got {type(config).__name__} (for {spec.key})")
    return _checked_config(spec, config)


@lru_cache(maxsize=256)
def _checked_config(spec, config):
    return config.check(spec)


@lru_cache(maxsize=256)
def _default_config(spec, path):
    return default_config_for(spec, path).check(spec)


@lru_cache(maxsize=None)
def _paging_tables(gpu: str) -> dict:
    return load_paging_tables(gpu)


@lru_cache(maxsize=1024)
def _tuned_path(spec, path: str, device) -> tuple[tuple[int, ...], dict]:
    """(buckets, {bucket: config}) of the first table with an entry for ``spec``'s ``path``: the GPU's own,
    then its stand-ins' (``dispatch.table_gpus``; reported once); ((), {}) if none has one."""
    gpus = table_gpus(device, spec.arch)
    key = entry_key(spec, path)
    for gpu in gpus:
        entries = _paging_tables(gpu).get(key)
        if entries:
            if gpu != gpus[0]:
                report_reference(gpus[0], gpu, spec, "sparsemla tune-paging")
            return tuple(sorted(entries)), {b: e.config for b, e in entries.items()}
    return (), {}


def tuned_config(spec, path: str, size: int, device) -> PagingConfig:
    """The config a call of ``spec``'s ``path`` with ``size`` (rows, source pages or ids) runs on ``device``
    without ``config=``: its GPU's tuned entry, else the arch's default."""
    return _config(spec, check_path(spec, path), None, torch.device(device), size)


def clear_tuned_cache() -> None:
    """Forget the paging tables read so far (after writing one, or in tests)."""
    for f in (_paging_tables, _tuned_path):
        f.cache_clear()


def _positive_int(name, v):
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name}={v!r}: expected a positive int")


# --------------------------------------------------------------------------- convert_indices

def convert_indices_reference(req_id_per_token, block_table, local_indices, *, page_size,
                              block_stride_rows=None, return_valid_counts=False):
    """PyTorch version of ``convert_indices`` (same arguments, same results)."""
    stride = page_size if block_stride_rows is None else block_stride_rows
    T, K = local_indices.shape
    R, MB = block_table.shape
    pos = local_indices.long()
    req = req_id_per_token.long()
    ok = (pos >= 0) & ((req >= 0) & (req < R))[:, None]
    bidx = torch.where(ok, pos, 0) // page_size
    ok &= bidx < MB
    if R and MB:
        blk = block_table[req.clamp(0, R - 1)].long().gather(1, bidx.clamp(max=MB - 1))
    else:
        blk = torch.full_like(pos, -1)
    ok &= blk >= 0
    slots = torch.where(ok, blk * stride + pos % page_size, -1).to(torch.int32)
    if not return_valid_counts:
        return slots
    order = torch.sort((~ok).to(torch.int8), dim=1, stable=True).indices
    return slots.gather(1, order), ok.sum(1).to(torch.int32)


@on_tensor_device
def convert_indices(req_id_per_token, block_table, local_indices, *, page_size,
                    block_stride_rows=None, return_valid_counts=False, config=None):
    """Request-local top-k token positions -> global slot ids.

    req_id_per_token: int32 [T]; block_table: int32 [R, max_blocks]; local_indices: int32
    [T, topk], -1 = none. Slot = block_table[req, pos // page_size] * stride + pos % page_size
    with stride = block_stride_rows (default page_size). -1 stays -1; a block index past the
    table, a negative block id or a request id outside [0, R) gives -1. Returns int32 [T, topk];
    with ``return_valid_counts`` each row is compacted (valid entries first, in order, then -1)
    and int32 [T] counts of valid entries are returned too.
    """
    _check("local_indices", local_indices, dtypes=(torch.int32,), ndim=2)
    dev = local_indices.device
    T, K = local_indices.shape
    _check("req_id_per_token", req_id_per_token, dtypes=(torch.int32,), ndim=1, device=dev)
    if req_id_per_token.shape[0] != T:
        raise ValueError(f"req_id_per_token: shape {tuple(req_id_per_token.shape)}, expected ({T},) "
                         f"(one request id per row of local_indices)")
    _check("block_table", block_table, dtypes=(torch.int32,), ndim=2, device=dev)
    _positive_int("page_size", page_size)
    if block_stride_rows is not None:
        _positive_int("block_stride_rows", block_stride_rows)
    stride = page_size if block_stride_rows is None else block_stride_rows
    if T == 0 or K == 0 or not _use_kernels(dev):
        return convert_indices_reference(req_id_per_token, block_table, local_indices,
                                         page_size=page_size, block_stride_rows=stride,
                                         return_valid_counts=return_valid_counts)
    spec = ConvertIndicesSpec(page_size, K, device_arch(dev))
    cfg = _config(spec, "compact" if return_valid_counts else "plain", config, dev, T)
    out = torch.empty(T, K, dtype=torch.int32, device=dev)
    counts = torch.empty(T if return_valid_counts else 1, dtype=torch.int32, device=dev)
    grid = (T,) if return_valid_counts else (T, -(-K // cfg.block))
    launch(load_module(spec).convert_indices_kernel, grid,
           req_id_per_token, block_table, block_table.stride(0), block_table.stride(1),
           block_table.shape[0], block_table.shape[1], stride,
           local_indices, local_indices.stride(0), local_indices.stride(1), out, out.stride(0), counts,
           COMPACT=return_valid_counts, BLOCK_K=cfg.block, num_warps=cfg.num_warps)
    return (out, counts) if return_valid_counts else out


# --------------------------------------------------------------------------- pack_valid_prefix

def pack_valid_prefix_reference(slots, indptr, *, out=None):
    """PyTorch version of ``pack_valid_prefix``."""
    T, W = slots.shape
    if out is None:
        out = torch.zeros(int(indptr[-1]) if T else 0, dtype=torch.int32, device=slots.device)
    start = indptr[:-1].long()
    lens = (indptr[1:].long() - start).clamp(0, W)
    cols = torch.arange(W, device=slots.device)
    dst = start[:, None] + cols
    keep = (cols < lens[:, None]) & (dst >= 0) & (dst < out.numel())
    out[dst[keep]] = slots[keep].clamp(min=0).to(torch.int32)
    return out


@on_tensor_device
def pack_valid_prefix(slots, indptr, *, out=None, config=None):
    """Pack each row's valid prefix into flat CSR indices (what FlashInfer's page table reads).

    slots: int32 [T, W]; indptr: int32 [T+1]. out[indptr[t] + j] = max(slots[t, j], 0) for
    j < min(indptr[t+1] - indptr[t], W). Returns int32 [indptr[-1]] (entries no row writes: 0);
    with ``out`` (int32 1-D, preallocated) it writes there, drops anything past its end, leaves
    the other entries as they are, and never syncs.
    """
    _check("slots", slots, dtypes=(torch.int32,), ndim=2)
    dev = slots.device
    T, W = slots.shape
    _check("indptr", indptr, dtypes=(torch.int32,), ndim=1, device=dev)
    if indptr.shape[0] != T + 1:
        raise ValueError(f"indptr: shape {tuple(indptr.shape)}, expected ({T + 1},) (rows of slots + 1)")
    if out is not None:
        _check("out", out, dtypes=(torch.int32,), ndim=1, device=dev)
        if out.stride(0) != 1 and out.numel() > 1:
            raise ValueError(f"out: stride {out.stride(0)}, expected a contiguous 1-D tensor")
    if T == 0 or W == 0 or not _use_kernels(dev):
        return pack_valid_prefix_reference(slots, indptr, out=out)
    if out is None:
        out = torch.zeros(int(indptr[-1]), dtype=torch.int32, device=dev)  # reads the length: a sync
    spec = PackValidPrefixSpec(W, device_arch(dev))
    cfg = _config(spec, "plain", config, dev, T)
    launch(load_module(spec).pack_valid_prefix_kernel, (T, -(-W // cfg.block)),
           slots, slots.stride(0), slots.stride(1), indptr, out, out.numel(),
           BLOCK=cfg.block, num_warps=cfg.num_warps)
    return out


# --------------------------------------------------------------------------- page_split

def page_split_reference(src_pages, *, src_page_size, dst_page_size=64, touched_indices=None,
                         out=None):
    """PyTorch version of ``page_split`` (``out`` None: a new zero-filled buffer)."""
    P, D = src_page_size, dst_page_size
    if P == D:
        return src_pages
    N, ratio = src_pages.shape[0], P // D
    if out is None:
        out = torch.zeros(N * ratio, model1_page_bytes(D), dtype=src_pages.dtype, device=src_pages.device)
    src = src_pages.view(torch.uint8)
    data = src[:, :P * M1_DATA_ROW_BYTES].reshape(N, ratio, D * M1_DATA_ROW_BYTES)
    scale = src[:, P * M1_DATA_ROW_BYTES:P * (M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES)]
    scale = scale.reshape(N, ratio, D * M1_SCALE_ROW_BYTES)
    dst = out.view(torch.uint8).view(N, ratio, -1)
    pages = torch.arange(N, device=src.device)
    if touched_indices is not None:
        tok = touched_indices.reshape(-1).long()
        tok = tok[(tok >= 0) & (tok < N * P)]
        pages = torch.unique(tok // P)
    split = D * M1_DATA_ROW_BYTES
    dst[pages, :, :split] = data[pages]
    dst[pages, :, split:split + D * M1_SCALE_ROW_BYTES] = scale[pages]
    return out


class _PageList:
    """page_split's device state for touched pages, one per stream of a device: marks (int8 per source
    page, ``spacing`` bytes apart, in as many rows as the config's mark_copies),
    pages (the list of distinct touched source pages) and count (its length). Between calls every
    mark is 0: a call's mark kernel sets marks and zeroes count, its compact kernel lists the
    marked pages and clears their marks (with mark_claim: count is zeroed, the claim kernel sets
    claims and lists, the copy clears the claims), all on the device, so a call replays from a
    CUDA graph (make one call on the capture stream before capturing, so the state is allocated and
    zeroed outside the graph)."""

    def __init__(self, device, capacity: int, mark_bytes: int, in_graph: bool = False):
        # Kept across calls: outside any graph's pool (launch.kept_buffer); a captured call's own (in_graph):
        # from the graph's pool, zeroed in the graph.
        def alloc(numel, dtype, zero=False):
            if in_graph:
                return (torch.zeros if zero else torch.empty)(numel, dtype=dtype, device=device)
            return kept_buffer(numel, dtype, device, zero=zero)

        self.capacity = capacity
        self.marks = alloc(mark_bytes, torch.int8, zero=True)
        self.claims = alloc(capacity, torch.int32, zero=True)  # mark_claim's marks
        self.pages = alloc(capacity, torch.int32)
        self.count = alloc(1, torch.int32, zero=True)
        # lead_split: the lead share's list, and the side stream its copy runs on
        self.lead_pages = alloc(capacity, torch.int32)
        self.lead_count = alloc(1, torch.int32, zero=True)
        self.side = torch.cuda.Stream(device) if device.type == "cuda" else None


def page_list_of(device) -> _PageList | None:
    """The touched path's state of ``device``'s current stream (None before its first touched call there)."""
    return _list_buffers.get(stream_key(device))


def _page_list(device, num_pages: int, cfg) -> _PageList:
    """The current stream's state, reallocated when it holds fewer than ``num_pages`` pages or fewer
    marks than ``cfg`` needs (mark_copies rows of num_pages marks, mark_spacing bytes apart). While a CUDA
    graph is captured on a stream without a state large enough, the call gets a state of its own from the
    graph's pool, zeroed in the graph: a shared one allocated there would be zeroed only when that graph
    replays, and another graph captured on the stream could replay first."""
    mark_bytes = cfg.mark_copies * num_pages * cfg.mark_spacing
    key = stream_key(device)
    state = _list_buffers.get(key)
    if state is None or state.capacity < num_pages or state.marks.numel() < mark_bytes:
        capacity, mark_bytes = max(num_pages, 1), max(mark_bytes, 1)
        if capturing(device):
            report_capture_buffers("page_split's touched-page state large enough")
            return _PageList(device, capacity, mark_bytes, in_graph=True)
        if state is not None:
            _retired_lists.setdefault(device, []).append(state)
            capacity, mark_bytes = max(capacity, 2 * state.capacity), max(mark_bytes, 2 * state.marks.numel())
        state = _PageList(device, capacity, mark_bytes)
        _list_buffers[key] = state
    return state


def release_retired_lists() -> int:
    """Free the touched path's device states that a larger one replaced; returns the bytes released. Safe
    only when no CUDA graph captured while one of them was current will replay."""
    tensors = [t for states in _retired_lists.values() for st in states for t in vars(st).values()
               if isinstance(t, torch.Tensor)]
    _retired_lists.clear()
    return sum(t.numel() * t.element_size() for t in tensors)


def _num_sms(device) -> int:
    """Multiprocessors the list kernel's fixed grid fills (1 under the interpreter: a few programs,
    so the CPU tests stride over the list)."""
    if device.type != "cuda":
        return 1
    if device not in _sm_counts:
        _sm_counts[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _sm_counts[device]


@on_tensor_device
def page_split(src_pages, *, src_page_size, dst_page_size=64, touched_indices=None, out=None,
               buffer_tag="default", config=None):
    """Split MODEL1 footer-format pages of ``src_page_size`` tokens into pages of ``dst_page_size``.

    src_pages: uint8 (or float8_e4m3fn) [N, page_bytes(src_page_size)], pages contiguous.
    Returns [N * ratio, page_bytes(dst_page_size)] of the same dtype; token ids are unchanged.
    touched_indices: token ids into the source pool (any shape, int32/int64, -1 = none): only
    source pages holding one of them are copied, the other destination pages keep their bytes.
    out: the destination; None keeps a persistent buffer per (device, buffer_tag), filled
    completely on the call that allocates it. Padding bytes are never written.
    config: every page: ``block`` and ``num_warps``; touched pages: ``num_warps`` and
    ``programs_per_sm`` of the copy's fixed grid, ``chunks``, ``lead_split`` and ``lead_min_ids``
    (inside CUDA-graph capture only, see ``_takes_lead``), ``mark_claim``, ``mark_dedup``,
    ``mark_copies``, ``mark_check`` and ``mark_spacing`` (see ``PagingConfig``).
    With touched_indices the kernels keep state on the device (see ``_PageList``; the default's
    marks take 2 x 128 B per source page; one state per stream): make one call on the capture stream
    before capturing a CUDA graph.
    """
    _positive_int("src_page_size", src_page_size)
    _positive_int("dst_page_size", dst_page_size)
    if src_page_size % dst_page_size:
        raise ValueError(f"src_page_size={src_page_size}: expected a multiple of "
                         f"dst_page_size={dst_page_size}")
    _check("src_pages", src_pages, dtypes=_PAGE_DTYPES, ndim=2)
    P, D = src_page_size, dst_page_size
    pb = model1_page_bytes(P)
    if src_pages.shape[1] != pb or (src_pages.shape[0] > 1 and src_pages.stride(0) != pb) \
            or src_pages.stride(1) != 1:
        raise ValueError(f"src_pages: shape {tuple(src_pages.shape)}, strides {tuple(src_pages.stride())}; "
                         f"expected contiguous MODEL1 pages [num_pages, {pb}] for src_page_size={P} "
                         f"(page_bytes = ceil({P} * 584 / 576) * 576)")
    if P == D:
        return src_pages
    dev = src_pages.device
    N, ratio = src_pages.shape[0], P // D
    shape = (N * ratio, model1_page_bytes(D))
    if touched_indices is not None:
        _check("touched_indices", touched_indices, dtypes=(torch.int32, torch.int64), ndim=None,
               device=dev)
    full = touched_indices is None
    if out is None:
        key = (dev, buffer_tag)
        out = _split_buffers.get(key)
        if out is None or tuple(out.shape) != shape or out.dtype != src_pages.dtype:
            # (kept across calls: outside any graph's pool, see launch.kept_buffer, unless a capture makes it)
            out = (torch.zeros(shape, dtype=src_pages.dtype, device=dev) if capturing(dev)
                   else kept_buffer(shape, src_pages.dtype, dev, zero=True))
            _split_buffers[key] = out
            full = True  # a new buffer holds nothing yet: convert every page once
    else:
        _check("out", out, dtypes=(src_pages.dtype,), ndim=2, device=dev)
        if tuple(out.shape) != shape or not out.is_contiguous():
            raise ValueError(f"out: shape {tuple(out.shape)}, expected contiguous {shape} "
                             f"({N} pages x {ratio} for {P} -> {D} tokens per page)")
    if N == 0:
        return out
    if not _use_kernels(dev):
        return page_split_reference(src_pages, src_page_size=P, dst_page_size=D,
                                    touched_indices=None if full else touched_indices, out=out)
    for name, t in (("src_pages", src_pages), ("out", out)):
        if t.data_ptr() % 16:
            raise ValueError(f"{name}: starts at an address that is not 16-byte aligned")
    spec = PageSplitSpec(P, D, device_arch(dev))
    mod = load_module(spec)
    src64, dst64 = src_pages.view(torch.uint8).view(torch.int64), out.view(torch.uint8).view(torch.int64)
    if full:
        cfg = _config(spec, "all", config, dev, N)
        launch(mod.page_split_kernel, (N * ratio,), src64, dst64, BLOCK=cfg.block, num_warps=cfg.num_warps)
        return out
    tok = touched_indices.reshape(-1)
    if tok.numel() == 0:
        return out
    cfg = _config(spec, "touched", config, dev, tok.numel())
    # The list of distinct touched source pages, then a fixed grid striding over it: no host sync,
    # and only the listed pages' bytes move.
    if _takes_lead(cfg, tok, dev):
        _touched_with_lead(mod, src64, dst64, tok, N, ratio, cfg)
        return out
    for step in touched_launches(mod, src64, dst64, tok, N, ratio, cfg):
        step()
    return out


def _takes_lead(cfg, tok, device) -> bool:
    """Whether a touched call splits off a lead share: ``cfg.lead_split`` with at least
    ``cfg.lead_min_ids`` ids, and on a GPU only while a CUDA graph is being captured, or on the
    first such eager call per device and config (it compiles the lead path's kernels, so that a
    capture after a warm-up call compiles nothing). Eager, its extra launches and stream fork cost
    more host time than the GPU time they hide (H200, session 10: 340-420 us per eager call against
    160-170 us for the plain path, whose GPU time is 80-86 us)."""
    if not cfg.lead_split or tok.numel() < cfg.lead_min_ids:
        return False
    return device.type != "cuda" or _captured_or_first(_lead_compiled, device, cfg)


def _captured_or_first(built: set, device, cfg) -> bool:
    """True while a CUDA graph is being captured, and on the first eager call per (device, config)
    in ``built`` (it compiles the path's kernels, so that a capture after a warm-up call compiles nothing)."""
    if torch.cuda.is_current_stream_capturing():
        return True
    if (device, cfg) in built:
        return False
    built.add((device, cfg))
    return True


def touched_launches(mod, src64, dst64, tok, N: int, ratio: int, cfg):
    """page_split's three launches for touched pages, in order: mark, compact (or with
    mark_claim: zero the count, claim), copy (separate so a benchmark can time each)."""
    state = _page_list(src64.device, N, cfg)
    copy = _copy(mod, state, src64, dst64, N, ratio, cfg, state.pages, state.count)
    if cfg.mark_claim:
        return (state.count.zero_,
                lambda: launch(mod.page_claim_kernel, (-(-tok.numel() // MARK_BLOCK),),
                               tok, tok.numel(), state.claims, N, state.pages, state.count, BLOCK=MARK_BLOCK,
                               num_warps=4),
                copy)
    return (_mark(mod, state, tok, N, cfg, state.count, bool(cfg.mark_check)),
            _compact(mod, state, N, cfg, state.pages, state.count, lead=False),
            copy)


def _mark(mod, state, tok, N: int, cfg, count, check: bool):
    """The mark kernel's launch over ``tok`` (it zeroes ``count``, the list it precedes)."""
    return lambda: launch(mod.page_mark_kernel, (-(-tok.numel() // MARK_BLOCK),),
                          tok, tok.numel(), state.marks, N, count, BLOCK=MARK_BLOCK, DEDUP=bool(cfg.mark_dedup),
                          COPIES=cfg.mark_copies, CHECK=check, SPACING=cfg.mark_spacing, num_warps=4)


def _compact(mod, state, N: int, cfg, pages, count, lead: bool):
    """The compact kernel's launch into ``pages[0:count]`` (``lead``: marks of listed pages become 2)."""
    return lambda: launch(mod.page_compact_kernel, (-(-N // COMPACT_BLOCK),),
                          state.marks, N, pages, count, BLOCK=COMPACT_BLOCK, COPIES=cfg.mark_copies,
                          SPACING=cfg.mark_spacing, LEAD=lead, num_warps=4)


def _copy(mod, state, src64, dst64, N: int, ratio: int, cfg, pages, count, tma: bool = True):
    """The copy kernel's launch over ``pages[0:count]``: a fixed grid of a few programs per SM
    (with mark_claim it clears the claims of the pages it copies); the TMA copy where ``tma``,
    ``cfg.tma_stages`` and the GPU allow it (``_tma_copy``)."""
    if tma and cfg.tma_stages and not cfg.mark_claim:  # (the list kernel clears the claims)
        copy = _tma_copy(mod, src64, dst64, N, cfg, pages, count)
        if copy is not None:
            return copy
    grid = (min(N * ratio, cfg.programs_per_sm * _num_sms(src64.device)),)
    if cfg.chunks:
        return lambda: launch(mod.page_split_chunk_kernel, grid, src64, dst64, pages, count, N, state.claims,
                              CLEAR=bool(cfg.mark_claim), CHUNKS=cfg.chunks, num_warps=cfg.num_warps)
    return lambda: launch(mod.page_split_list_kernel, grid, src64, dst64, pages, count, N, state.claims,
                          CLEAR=bool(cfg.mark_claim), num_warps=cfg.num_warps)


def _tma_copy(mod, src64, dst64, N: int, cfg, pages, count):
    """page_split_tma_kernel's launch over ``pages[0:count]`` (one program per SM), or None where it
    cannot run: under the interpreter, before sm90, where ``PageSplitTma`` does not fit the page
    sizes, or for a pool of 2**31 rows of 64 B or more (TMA coordinates are int32); and eagerly
    launched, except on the first call per config (``_captured_or_first``): its launch through the
    JIT with four tensor descriptors costs about 120 us of host time (H200, session 19: 95 -> 216 us
    per eager call) against the 2-4 us of GPU time it saves."""
    dev = src64.device
    if dev.type != "cuda" or torch.cuda.get_device_capability(dev)[0] < 9:
        return None
    spec = PageSplitSpec(mod.SRC_PAGE_SIZE, mod.DST_PAGE_SIZE, device_arch(dev))
    if PageSplitTma.problem(spec) is not None or max(src64.numel(), dst64.numel()) * 8 // TMA_ROW_BYTES >= 1 << 31:
        return None
    if not _captured_or_first(_tma_compiled, dev, cfg):  # (last: only a call that can run it builds it)
        return None
    unit = PageSplitTma(spec)
    tmod, ctx = load_module(unit), unit.template_context()
    stages = PageSplitTma.stages(spec, cfg.tma_stages)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    width = TMA_ROW_BYTES // 8
    src2, dst2 = src64.view(-1, width), dst64.view(-1, width)
    lay = tma_layout()
    # src_data, dst_data (boxes of data rows), src_scale, dst_scale (a destination page's scale rows)
    desc = [TensorDescriptor(t, list(t.shape), [width, 1], [rows, width], lay)
            for rows in (ctx["box_rows"], ctx["scale_rows"]) for t in (src2, dst2)]
    grid = (_num_sms(dev),)
    return lambda: tmod.page_split_tma_kernel[grid](*desc, pages, count, N, STAGES=stages, num_warps=1,
                                                    **COMPILE_OPTIONS)


def _touched_with_lead(mod, src64, dst64, tok, N: int, ratio: int, cfg) -> None:
    """page_split of touched pages with a lead share (``cfg.lead_split``): mark and list the pages
    of the first 1/lead_split of the ids (their marks become 2), copy them on the side stream
    while the rest of the ids mark only unlisted pages (CHECK), then list and copy those and
    join. With scattered ids the lead share already names nearly every page, so the big copy
    starts after a short mark instead of the whole one. Under the interpreter: one stream."""
    state = _page_list(src64.device, N, cfg)
    lead = min(tok.numel(), -(-tok.numel() // (cfg.lead_split * 16)) * 16)  # whole 16s: the rest stays aligned
    _mark(mod, state, tok[:lead], N, cfg, state.lead_count, bool(cfg.mark_check))()
    _compact(mod, state, N, cfg, state.lead_pages, state.lead_count, lead=True)()
    copy_lead = _copy(mod, state, src64, dst64, N, ratio, cfg, state.lead_pages, state.lead_count)
    main = torch.cuda.current_stream(src64.device) if state.side is not None else None
    if main is not None:
        state.side.wait_stream(main)
        with torch.cuda.stream(state.side):
            copy_lead()
    else:
        copy_lead()
    if lead < tok.numel():
        _mark(mod, state, tok[lead:], N, cfg, state.count, True)()
    else:
        state.count.zero_()
    _compact(mod, state, N, cfg, state.pages, state.count, lead=False)()  # also clears the lead's 2s
    # (the list kernel: TMA programs, a stage of shared memory per page, cannot start beside the lead's)
    _copy(mod, state, src64, dst64, N, ratio, cfg, state.pages, state.count, tma=False)()
    if main is not None:
        main.wait_stream(state.side)
