"""FlashInfer as an optional backend (``pip install 'sparsemla[flashinfer]'``).

SM90 (``run_flashinfer`` on an sm90 spec): FlashInfer's ``BatchMLAPagedAttentionWrapper``
(FA3) with page_size=1, the trick vLLM uses: each query token is one batch row whose page
table is its own list of valid slots, packed into a CSR array (``kv_indptr``), with
``kv_len`` = its valid count and causal=False. Caches: "auto" (bf16) and "fp8_e4m3" (one
per-tensor scale, passed as ``ckv_scale`` and ``kpe_scale``), d_v = 512 with a rope part of
64 or 0 (NoPE). No attention sink, no extra cache: the dispatcher asks ``supports(spec)``.

``plan()`` is host work with device-to-host copies, so every call reads the valid counts
back to the host (one sync) and re-plans only when T, H, sm_scale or those counts change;
neither may happen inside CUDA-graph capture (use the Triton backend there). One wrapper
per (device, spec) keeps its plan; its reserved index buffers are written in place.

SM120/SM121: ``_sparse_mla_sm120_paged_attention`` (FlashInfer's SM120 sparse MLA kernels, as
SGLang calls them) on "model1" caches of 64-token pages, with topk_length, attn_sink, an
extra cache, and split-K scratch for decode (T <= 64). UNTESTED ON HARDWARE: the argument
mapping (``sm120_arguments``) is unit-tested on the CPU only.

FlashInfer is imported only when a call needs it.
"""
from __future__ import annotations

import importlib.util
import math
from functools import lru_cache

import torch

from sparsemla.gen.spec import KernelSpec, next_pow2

from .kvcache import KVCacheView, valid_mask
from .launch import capturing, kept_buffer, report_capture_buffers, stream_key

LN2 = math.log(2.0)
_WORKSPACE_BYTES = 128 << 20
SM120_PAGE = 64  # tokens per page FlashInfer's SM120 kernels read
SM120_SPLIT = 64  # top-k entries per decode split (FlashInfer's _BI)
SM120_DECODE_MAX_TOKENS = 64  # FlashInfer's _DECODE_MAX_TOKENS: above it, no split-K scratch


@lru_cache(maxsize=None)
def available() -> bool:
    """Whether the flashinfer package is installed (without importing it)."""
    return importlib.util.find_spec("flashinfer") is not None


def version() -> str | None:
    if not available():
        return None
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version
    for dist in ("flashinfer-python", "flashinfer"):
        try:
            return dist_version(dist)
        except PackageNotFoundError:
            pass
    return "unknown version"


def _flashinfer():
    try:
        import flashinfer
        import flashinfer.mla  # noqa: F401
    except ImportError as e:
        raise ImportError("backend='flashinfer' needs the flashinfer package, which is not installed "
                          "(pip install 'sparsemla[flashinfer]'); use backend='triton' instead") from e
    return flashinfer


# ---------------------------------------------------------------------------------------------
# What this backend covers
# ---------------------------------------------------------------------------------------------

def slot_stride(view: KVCacheView) -> int | None:
    """Elements between consecutive slots, or None if slots are not evenly spaced (pages not
    back to back), which page_size=1 addressing cannot express."""
    if view.page_size == 1:
        return view.stride_page
    if view.stride_page == view.page_size * view.stride_row:
        return view.stride_row
    return None


def unsupported_reason(spec: KernelSpec, view: KVCacheView | None = None,
                       extra_view: KVCacheView | None = None) -> str | None:
    """Why FlashInfer cannot run ``spec`` (and these caches), or None if it can."""
    if spec.max_logits:
        return "return_max_logits: FlashInfer's kernels return no max of the scores"
    if spec.arch == "sm90":
        if spec.kv_format not in ("auto", "fp8_e4m3"):
            return (f"kv_format={spec.kv_format!r}: FlashInfer's SM90 MLA wrapper reads only 'auto' "
                    f"(bf16) or 'fp8_e4m3' (per-tensor scale) caches")
        if spec.d_v != 512 or spec.d_qk - spec.d_v not in (0, 64):
            return f"d_qk={spec.d_qk}, d_v={spec.d_v}: FlashInfer's MLA wrapper needs d_v=512 and a rope part of 0 or 64"
        if spec.q_dtype != "bf16":
            return f"q dtype {spec.q_dtype}: FlashInfer's MLA wrapper is used with bf16 q only"
        if spec.has_sink:
            return "attn_sink: FlashInfer's MLA wrapper has no attention sink"
        if spec.extra_topk:
            return "extra_kv_cache: FlashInfer's MLA wrapper reads one cache"
        if view is not None and slot_stride(view) is None:
            return (f"kv_cache pages are not back to back (page stride {view.stride_page} != "
                    f"page_size {view.page_size} x row stride {view.stride_row}); page_size=1 "
                    f"addressing needs evenly spaced slots")
        return None
    if spec.arch in ("sm120", "sm121"):
        if spec.kv_format != "model1":
            return (f"kv_format={spec.kv_format!r}: the FlashInfer SM120 path is wired for 'model1' "
                    f"caches only")
        if spec.page_size != SM120_PAGE or (spec.extra_topk and spec.extra_page_size != SM120_PAGE):
            return (f"page_size={spec.page_size}"
                    + (f", extra_page_size={spec.extra_page_size}" if spec.extra_topk else "")
                    + f": FlashInfer's SM120 kernels read {SM120_PAGE}-token pages")
        if spec.q_dtype != "bf16":
            return f"q dtype {spec.q_dtype}: FlashInfer's SM120 kernels need bf16 q"
        if spec.num_heads > 128:
            return f"num_heads={spec.num_heads}: FlashInfer's SM120 kernels take at most 128 heads"
        if spec.has_sink and spec.return_lse:
            return ("return_lse with attn_sink: FlashInfer's SM120 lse includes the sink, sparsemla's "
                    "does not (and this path is untested on hardware)")
        return None
    return f"arch {spec.arch}: no FlashInfer path"


def supports(spec: KernelSpec) -> bool:
    return unsupported_reason(spec) is None


# ---------------------------------------------------------------------------------------------
# Pure argument mapping (unit-tested on the CPU)
# ---------------------------------------------------------------------------------------------

def csr_indptr(lengths: torch.Tensor) -> torch.Tensor:
    """int32 [len + 1]: exclusive prefix sum of ``lengths``."""
    indptr = torch.zeros(lengths.numel() + 1, dtype=torch.int32, device=lengths.device)
    torch.cumsum(lengths, 0, out=indptr[1:])
    return indptr


def pack_valid_slots(indices: torch.Tensor, valid: torch.Tensor, kv_indptr: torch.Tensor,
                      kv_indices: torch.Tensor) -> None:
    """Write row t's valid slots, in order, to ``kv_indices[kv_indptr[t]:]`` (device ops only,
    no sync). ``kv_indices`` is zeroed first and must have one spare element at its end, which
    receives the skipped entries; a row planned with more entries than it has reads slot 0."""
    T = indices.shape[0]
    dump = kv_indices.numel() - 1
    pos = torch.cumsum(valid, 1) - 1
    dest = torch.where(valid, kv_indptr[:T, None].to(torch.int64) + pos, dump)
    kv_indices.zero_()
    kv_indices.scatter_(0, dest.reshape(-1), indices.reshape(-1).to(torch.int32))


def split_q(q: torch.Tensor, d_v: int):
    """(q_nope [T, H, d_v], q_pe [T, H, d_qk - d_v]) as views of ``q``."""
    if q.stride(-1) != 1:
        q = q.contiguous()
    return q[..., :d_v], q[..., d_v:]


def split_cache(view: KVCacheView):
    """(ckv [num_slots, 1, d_v], kpe [num_slots, 1, d_qk - d_v]): the cache as FlashInfer pages
    of one token, views of its memory (fp8 caches as float8_e4m3fn)."""
    stride = slot_stride(view)
    if stride is None:
        raise ValueError(f"kv_cache: pages are not back to back (page stride {view.stride_page} != "
                         f"page_size {view.page_size} x row stride {view.stride_row})")
    base = view.views["elem"] if "elem" in view.views else view.views["fp8"].view(torch.float8_e4m3fn)
    d_qk, d_v = view.layout.d_qk, view.layout.d_v
    rows = torch.as_strided(base, (view.num_slots, 1, d_qk), (stride, d_qk, 1), base.storage_offset())
    return rows[..., :d_v], rows[..., d_v:]


def natural_lse(lse2: torch.Tensor, empty: torch.Tensor | None) -> torch.Tensor:
    """FlashInfer's base-2 lse as a natural log, +inf on rows with nothing valid."""
    lse = lse2 * LN2
    if empty is not None:
        lse = lse.masked_fill(empty[:, None], math.inf)
    return lse


def _model1_pages_4d(view: KVCacheView) -> torch.Tensor:
    """FlashMLA's 4-D uint8 view [num_pages, page_size, 1, 584] of a model1 cache's pages."""
    pages = view.views["fp8"]
    n, pb = pages.shape[0], view.stride_page
    row = view.layout.row_bytes + 8
    return torch.as_strided(pages, (n, view.page_size, 1, row), (pb, row, row, 1), pages.storage_offset())


def _within(lengths, indices):
    """lengths (None, or [T] int32) clamped to [0, the index rows' width]."""
    return None if lengths is None else lengths.clamp(0, indices.shape[1])


def sm120_arguments(q, view, indices, sm_scale, out, lse, *, topk_length=None, attn_sink=None,
                    extra_view=None, extra_indices=None, extra_topk_length=None, scratch=None):
    """(args, kwargs) for ``flashinfer.mla._sparse_mla_sm120._sparse_mla_sm120_paged_attention``.

    ``lse`` must be a float32 [T, H] buffer (the kernel always writes one). For T <= 64 the
    decode kernels need split-K scratch: ``scratch(shape, dtype)`` allocates it (default:
    torch.empty on q's device). Untested on hardware.
    """
    T, H, _ = q.shape
    alloc = scratch or (lambda shape, dtype: torch.empty(shape, dtype=dtype, device=q.device))
    # Lengths as the other backends read them (below 0 as 0, past the list as its end), so the kernel never reads
    # past an index row
    topk_length = _within(topk_length, indices)
    kwargs = dict(d_v=view.layout.d_v, topk_length=topk_length, attn_sink=attn_sink,
                  extra_kv_cache=None, extra_indices=None, extra_topk_length=None,
                  mid_out=None, mid_lse=None)
    extra_topk = 0
    if extra_view is not None:
        kwargs.update(extra_kv_cache=_model1_pages_4d(extra_view),
                      extra_indices=extra_indices.contiguous(),
                      extra_topk_length=_within(extra_topk_length, extra_indices))
        extra_topk = extra_indices.shape[1]
    if T <= SM120_DECODE_MAX_TOKENS:
        splits = -(-indices.shape[1] // SM120_SPLIT) + -(-extra_topk // SM120_SPLIT)
        kwargs["mid_out"] = alloc((T, H, splits, view.layout.d_v), torch.bfloat16)
        kwargs["mid_lse"] = alloc((T, H, splits), torch.float32)
    args = (q.contiguous(), _model1_pages_4d(view), indices.contiguous(), out, lse, float(sm_scale))
    return args, kwargs


# ---------------------------------------------------------------------------------------------
# SM90: the MLA wrapper, planned per (device, spec)
# ---------------------------------------------------------------------------------------------

# Per (device, stream handle): calls on two streams may run at once, and shared buffers would mix them.
_float_workspaces: dict = {}
_states: dict = {}  # (device, stream handle, spec) -> _WrapperState


def _new_wrapper(workspace, qo_indptr, kv_indptr, kv_indices, kv_len):
    """A CUDA-graph-mode wrapper: plan() copies into (and run() reads) these reserved buffers,
    so the packed indices written in place between plans are what the kernel reads."""
    fi = _flashinfer()
    return fi.mla.BatchMLAPagedAttentionWrapper(workspace, use_cuda_graph=True, qo_indptr=qo_indptr,
                                                kv_indptr=kv_indptr, kv_indices=kv_indices,
                                                kv_len_arr=kv_len, backend="fa3")


class _WrapperState:
    """One wrapper with reserved buffers for up to ``capacity`` query tokens of one spec.

    Rows past the current T are planned empty (no query, no KV), as vLLM does, so one
    wrapper serves every T up to its capacity.
    """

    def __init__(self, device: torch.device, capacity: int, topk: int):
        key = stream_key(device)
        ws = _float_workspaces.get(key)
        if ws is None:
            ws = _float_workspaces[key] = kept_buffer(_WORKSPACE_BYTES, torch.uint8, device)

        def i32(numel):  # kept across calls, outside any graph's pool (launch.kept_buffer)
            return kept_buffer(numel, torch.int32, device, zero=True)

        self.capacity = capacity
        self.kv_indptr = i32(capacity + 1)
        self.kv_indices = i32(capacity * topk + 1)  # + 1: pack's spare element
        self.wrapper = _new_wrapper(ws, i32(capacity + 1), self.kv_indptr, self.kv_indices, i32(capacity))
        self.plan_key = None
        self.total = 0

    def plan(self, T: int, lengths: torch.Tensor, sm_scale: float, spec: KernelSpec, kv_dtype):
        """Re-plan if T, sm_scale or the per-row lengths (host int32 [T]) changed."""
        key = (T, sm_scale, kv_dtype)
        if self.plan_key is not None and self.plan_key[0] == key and torch.equal(self.plan_key[1], lengths):
            return
        C = self.capacity
        qo_indptr = torch.arange(C + 1, dtype=torch.int32).clamp_(max=T)
        kv_len = torch.zeros(C, dtype=torch.int32)
        kv_len[:T] = lengths
        kv_indptr = csr_indptr(kv_len)
        self.total = int(kv_indptr[-1])
        self.wrapper.plan(qo_indptr, kv_indptr, self.kv_indices[:self.total], kv_len, spec.num_heads,
                          spec.d_v, spec.d_qk - spec.d_v, 1, False, sm_scale,
                          q_data_type=torch.bfloat16, kv_data_type=kv_dtype)
        self.plan_key = (key, lengths.clone())


def _state(device: torch.device, spec: KernelSpec, T: int) -> _WrapperState:
    key = (*stream_key(device), spec)
    st = _states.get(key)
    if st is None or st.capacity < T:
        st = _states[key] = _WrapperState(device, max(16, next_pow2(T)), spec.topk)
    return st


def _run_sm90(spec, q, view, indices, sm_scale, out, lse, topk_length):
    T = q.shape[0]
    valid = valid_mask(indices, topk_length, view.num_slots)
    counts = valid.sum(1, dtype=torch.int32)
    counts_host = counts.cpu()  # the one device-to-host sync: plan() needs host lengths
    st = _state(q.device, spec, T)
    kv_dtype = torch.bfloat16 if spec.kv_format == "auto" else torch.float8_e4m3fn
    # A row with nothing valid is planned with one entry (slot 0) and overwritten below.
    st.plan(T, counts_host.clamp(min=1), float(sm_scale), spec, kv_dtype)
    pack_valid_slots(indices, valid, st.kv_indptr, st.kv_indices[:st.total + 1])

    q_nope, q_pe = split_q(q, spec.d_v)
    ckv, kpe = split_cache(view)
    scales = {} if spec.kv_format == "auto" else dict(ckv_scale=view.kv_scale, kpe_scale=view.kv_scale)
    o = out if out.is_contiguous() else torch.empty_like(out, memory_format=torch.contiguous_format)
    if lse is None:
        st.wrapper.run(q_nope, q_pe, ckv, kpe, out=o, return_lse=False, **scales)
    else:
        _, lse2 = st.wrapper.run(q_nope, q_pe, ckv, kpe, out=o, return_lse=True, **scales)
    empty = counts == 0 if bool((counts_host == 0).any()) else None
    if empty is not None:
        o.masked_fill_(empty[:, None, None], 0.0)
    if o is not out:
        out.copy_(o)
    if lse is not None:
        lse.copy_(natural_lse(lse2, empty))


# ---------------------------------------------------------------------------------------------
# SM120 / SM121 (untested on hardware)
# ---------------------------------------------------------------------------------------------

_scratch: dict = {}  # (device, stream handle, dtype) -> the sm120 kernel's split-K buffers


def _scratch_alloc(device):
    def alloc(shape, dtype):
        numel = math.prod(shape)
        key = (*stream_key(device), dtype)
        buf = _scratch.get(key)
        if buf is None or buf.numel() < numel:
            if capturing(device):  # a captured call's own, from the graph's pool (see triton_backend)
                report_capture_buffers("the FlashInfer kernel's split-K buffers")
                return torch.empty(shape, dtype=dtype, device=device)
            buf = _scratch[key] = kept_buffer(numel, dtype, device)
        return buf[:numel].view(shape)
    return alloc


def _run_sm120(spec, q, view, indices, sm_scale, out, lse, topk_length, attn_sink, extra_view,
               extra_indices, extra_topk_length):
    _flashinfer()
    from flashinfer.mla._sparse_mla_sm120 import _sparse_mla_sm120_paged_attention
    T, H, _ = q.shape
    o = out if out.is_contiguous() else torch.empty_like(out, memory_format=torch.contiguous_format)
    l = lse if lse is not None and lse.is_contiguous() else torch.empty(T, H, dtype=torch.float32, device=q.device)
    args, kwargs = sm120_arguments(q, view, indices, sm_scale, o, l, topk_length=topk_length,
                                   attn_sink=attn_sink, extra_view=extra_view, extra_indices=extra_indices,
                                   extra_topk_length=extra_topk_length, scratch=_scratch_alloc(q.device))
    _sparse_mla_sm120_paged_attention(*args, **kwargs)
    # Our conventions for a row with nothing valid (device ops, no sync): output 0, lse +inf.
    nonempty = valid_mask(indices, topk_length, view.num_slots).any(1)
    if extra_view is not None:
        nonempty |= valid_mask(extra_indices, extra_topk_length, extra_view.num_slots).any(1)
    o.masked_fill_(~nonempty[:, None, None], 0.0)
    if o is not out:
        out.copy_(o)
    if lse is not None:
        lse.copy_(l.masked_fill(~nonempty[:, None], math.inf))


def run_flashinfer(spec: KernelSpec, q: torch.Tensor, view: KVCacheView, indices: torch.Tensor,
                   sm_scale: float, out: torch.Tensor, lse: torch.Tensor | None, *, topk_length=None,
                   attn_sink=None, extra_view: KVCacheView | None = None, extra_indices=None,
                   extra_topk_length=None) -> None:
    """Write attention for ``q`` into ``out`` (and ``lse``, natural log) through FlashInfer.

    Same calling convention as ``run_triton`` (inputs already validated) but no config.
    Raises ValueError if FlashInfer cannot run ``spec``, ImportError if it is not installed,
    RuntimeError inside CUDA-graph capture on SM90 (plan() is host work).
    """
    reason = unsupported_reason(spec, view, extra_view)
    if reason is not None:
        raise ValueError(f"backend='flashinfer' cannot run {spec.key}: {reason}")
    T = q.shape[0]
    if T == 0:
        return
    if spec.arch in ("sm120", "sm121"):
        _run_sm120(spec, q, view, indices, sm_scale, out, lse, topk_length, attn_sink, extra_view,
                   extra_indices, extra_topk_length)
        return
    if q.is_cuda and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(f"backend='flashinfer' ({spec.key}) cannot run inside CUDA-graph capture: "
                           f"FlashInfer's plan() reads the per-token lengths on the host; "
                           f"capture backend='triton' instead")
    if view.num_slots == 0:
        out.zero_()
        if lse is not None:
            lse.fill_(math.inf)
        return
    _run_sm90(spec, q, view, indices, sm_scale, out, lse, topk_length)
