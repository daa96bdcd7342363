"""The public entry point: ``sparse_mla``."""
from __future__ import annotations

import logging
import math
import numbers
import os
import weakref
from collections import OrderedDict

import torch

from sparsemla.gen.render import interpreting
from sparsemla.gen.spec import Config, KernelSpec

from . import ops, triton_backend
from .device_guard import on_tensor_device
from .kvcache import describe_cache
from .reference import sparse_mla_reference

log = logging.getLogger("sparsemla")

BACKENDS = ("auto", "triton", "torch", "flashinfer")
_DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_FIXED_DIMS = {"fp8_ds_mla": (576, 512), "model1": (512, 512)}


def _check_sm_scale(sm_scale):
    """sm_scale must be a positive finite real number (a Python or NumPy one: it is read on the host)."""
    if type(sm_scale) is float and 0.0 < sm_scale < math.inf:  # the usual case, checked first: every call pays it
        return
    if (isinstance(sm_scale, bool) or not isinstance(sm_scale, numbers.Real)
            or not math.isfinite(sm_scale) or sm_scale <= 0):
        raise ValueError(f"sm_scale={sm_scale!r}: expected a positive finite float")


def device_arch(device: torch.device) -> str:
    """The spec arch for ``device``: from its compute capability, or SPARSEMLA_ARCH on the CPU."""
    if device.type != "cuda":
        return os.environ.get("SPARSEMLA_ARCH", "sm90")
    major, minor = torch.cuda.get_device_capability(device)
    if major == 9:
        return "sm90"
    if major == 12:
        return "sm121" if minor == 1 else "sm120"
    # Other parts run the same Triton code; sm120's smaller shared-memory budget is the safe default.
    return "sm120"


def _forced_backend() -> str | None:
    """The backend SPARSEMLA_BACKEND forces for backend="auto" calls, or None."""
    name = os.environ.get("SPARSEMLA_BACKEND", "")
    if name in ("", "auto"):
        return None
    if name not in BACKENDS:
        raise ValueError(f"SPARSEMLA_BACKEND={name!r}: expected one of {BACKENDS}")
    return name


def _auto_backend(spec: KernelSpec, num_tokens: int, device: torch.device, view, xview=None) -> str:
    """backend="auto" on CUDA: FlashInfer where the tuned table says so and it can run the
    spec, else Triton."""
    from sparsemla.runtime import dispatch
    lookup = getattr(dispatch, "lookup", None)  # the tuned-table lookup, where present
    entry = lookup(spec, num_tokens, device) if lookup is not None else None
    choice = entry.get("backend") if isinstance(entry, dict) else getattr(entry, "backend", None)
    if choice == "flashinfer":
        from . import flashinfer_backend as fb
        if fb.available() and fb.unsupported_reason(spec, view, xview) is None:
            return "flashinfer"
    return "triton"


_logged_choices: set = set()
_warned_fallbacks: set = set()


def _log_choice(spec: KernelSpec, backend: str) -> None:
    if (spec, backend) not in _logged_choices:
        _logged_choices.add((spec, backend))
        log.info("sparsemla: %s runs on backend %r", spec.key, backend)


def _nonempty_lists(indices, topk_length, extra_indices, extra_topk_length):
    """The lists a kernel runs when one is zero-width (an engine's empty compressed list, say), and whether
    the main and extra caches trade places: an empty extra list is no extra cache, and an empty main list
    beside a non-empty extra one trades places with it (the attention is over the union of both sets; each
    cache keeps its own page size and scale). A main list still zero-width means every row is empty."""
    if extra_indices is not None and extra_indices.shape[1] == 0:
        extra_indices = extra_topk_length = None
    if indices.shape[1] == 0 and extra_indices is not None:
        return (extra_indices, extra_topk_length, None, None), True
    return (indices, topk_length, extra_indices, extra_topk_length), False


def _outputs(T, H, device, return_lse, return_max_logits):
    """(lse, max_logits) for a call: None where not asked for. max_logits lives in the float after each LSE (a
    [T, H, 2] buffer at -inf, which the kernels raise by atomic max; see KernelSpec.max_logits)."""
    if return_max_logits:
        pair = torch.full((T, H, 2), float("-inf"), dtype=torch.float32, device=device)
        return pair[..., 0], pair[..., 1]
    return (torch.empty(T, H, dtype=torch.float32, device=device) if return_lse else None), None


def _result(out, lse, max_logits, return_lse):
    """out, (out, lse), (out, max_logits) or (out, lse, max_logits): what the call asked for."""
    if max_logits is None:
        return (out, lse) if return_lse else out
    return (out, lse, max_logits) if return_lse else (out, max_logits)


def _empty_rows(out, lse) -> None:
    """What a call with no slot at all writes: output 0, LSE +inf (FlashMLA's convention)."""
    out.zero_()
    if lse is not None:
        lse.fill_(float("inf"))


class _Prepared:
    """A validated call signature of the Triton path: its spec, config (a PartsLaunch's: one per part), cache
    views and launch.

    ``sparse_mla`` keeps one per signature (``_calls``), so a repeated call skips validation
    and argument marshalling; only the index-range check, which reads values, runs again.
    """

    __slots__ = ("spec", "config", "view", "extra_view", "launch", "check_indices", "return_lse",
                 "return_max_logits", "out_shape", "dtype", "device", "cache_refs", "rearranged")

    def __init__(self, spec, config, view, extra_view, launch, check_indices, out, return_lse, rearranged=False):
        self.spec, self.config, self.view, self.extra_view, self.launch = spec, config, view, extra_view, launch
        self.check_indices, self.return_lse, self.return_max_logits = check_indices, return_lse, spec.max_logits
        self.out_shape, self.dtype, self.device = out.shape, out.dtype, out.device
        self.cache_refs = ()
        self.rearranged = rearranged  # a list was zero-width: the launch takes _nonempty_lists's

    def __call__(self, q, indices, sm_scale, out, topk_length, attn_sink, extra_indices, extra_topk_length):
        if self.rearranged:
            (indices, topk_length, extra_indices, extra_topk_length), _ = _nonempty_lists(
                indices, topk_length, extra_indices, extra_topk_length)
        if self.check_indices:
            _check_index_range("indices", indices, self.view.num_slots)
            if self.extra_view is not None:
                _check_index_range("extra_indices", extra_indices, self.extra_view.num_slots)
        if out is None:
            out = torch.empty(self.out_shape, dtype=self.dtype, device=self.device)
        lse, max_logits = _outputs(*self.out_shape[:2], self.device, self.return_lse, self.return_max_logits)
        self.launch(q, indices, float(sm_scale), out, lse, topk_length, attn_sink, extra_indices, extra_topk_length)
        return _result(out, lse, max_logits, self.return_lse)


# Call signature (see sparse_mla) -> _Prepared, least recently used first. Bounded (~6 KB of host memory an entry):
# an engine that calls eagerly, e.g. between piecewise CUDA graphs, with ~60 layers' caches and ~70 padded batch
# sizes has ~4K signatures; past the bound the least recently used goes. Emptied by dispatch.clear_cache (a new
# tuned table may choose other configs).
_CALLS_MAX = 8192
_calls: OrderedDict = OrderedDict()
# Hits launch through the prepared TritonLaunch only while triton_backend.run_triton is this
# function; a replaced one (tests, benchmarks' captures) sees every call.
_run_triton = triton_backend.run_triton
_environ = os.environ


def clear_call_cache() -> None:
    """Forget every prepared call signature."""
    _calls.clear()


def _remember(key, prepared: _Prepared, caches) -> None:
    """Keep ``prepared`` for ``key`` until the cache tensors' owners are freed.

    The key holds each cache's data_ptr, and ``prepared`` its views (aliases made by detach(),
    so they pin the memory, not the tensor objects): a weakref to the tensor that owns each
    cache (its ``_base``, for a view such as ``kv_cache[layer]``) drops the entry, and with it
    the memory, when the caller frees the cache.
    """
    while len(_calls) >= _CALLS_MAX:
        _calls.popitem(last=False)
    token = id(prepared)

    def forget(_ref, key=key, token=token):
        if id(_calls.get(key)) == token:
            del _calls[key]

    prepared.cache_refs = tuple(weakref.ref(c if c._base is None else c._base, forget) for c in caches)
    _calls[key] = prepared


def _alias(t):
    """``t`` as a new tensor object over the same memory that keeps no reference to ``t``."""
    return t.detach() if isinstance(t, torch.Tensor) else t


def _check_tensor(name, t, *, dtypes, shape, device, allow_none=False):
    if t is None:
        if allow_none:
            return
        raise TypeError(f"{name}: expected a tensor, got None")
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        raise TypeError(f"{name}: dtype {t.dtype}, expected {' or '.join(map(str, dtypes))}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {tuple(shape)}")
    if t.device != device:
        raise ValueError(f"{name}: on {t.device}, expected q's device {device}")


def _check_index_range(name, idx, num_slots):
    if idx.numel() == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < -1 or hi >= num_slots:
        raise ValueError(f"{name}: slot ids must be -1 or in [0, {num_slots}) for this cache; "
                         f"found values in [{lo}, {hi}]")


@on_tensor_device
def sparse_mla(q, kv_cache, indices, *, sm_scale, kv_format="auto", d_v=512, topk_length=None,
               out=None, return_lse=False, backend="auto", kv_scale=None, page_size=None,
               attn_sink=None, extra_kv_cache=None, extra_indices=None, extra_topk_length=None,
               extra_page_size=None, extra_kv_scale=None, config: Config | None = None, compute_dtype=None,
               check_indices=None, return_max_logits=False):
    """Sparse MLA attention: each query token attends to its own selected KV slots.

    q: [T, H, d_qk] bf16/fp16 (fp32 for tests); kv_cache: see ``kv_format``; indices:
    [T, topk] int32 global slot ids (``page * page_size + offset``), -1 = skip; topk (and an extra
    cache's) may be 0. topk_length: [T] int32, only the first topk_length[t] indices count (a length
    below 0 as 0, one past topk as topk; extra_topk_length likewise).
    Returns [T, H, d_v] in q's dtype, or (out, lse) with lse [T, H] float32 (natural log,
    without the sink, +inf for a row with nothing valid, whose output is 0). ``return_max_logits``
    adds max_logits [T, H] float32 last, (out, max_logits) or (out, lse, max_logits): each head's
    largest scaled score ``sm_scale * q . k`` over the valid slots (-inf if none), FlashMLA prefill's
    second result, written by the attention kernel itself (not with an extra cache).
    ``check_indices`` (default: on for CPU tensors) raises on slot ids past the cache; the
    kernel itself always skips them, so a GPU call needs no host sync.
    ``backend``: "triton", "flashinfer" (optional package; SM90 bf16/fp8_e4m3 without sink or
    extra cache, SM120 model1), "torch" (the fp32 reference), or "auto": the environment
    variable SPARSEMLA_BACKEND if set, else on CUDA the tuned table's choice (Triton unless
    it names FlashInfer and FlashInfer can run the call), on the CPU the reference.

    With ``out`` given, a Triton call allocates nothing and never syncs with the host (a serving
    engine can capture it in a CUDA graph). A call whose signature (every shape, stride, dtype and
    device, the caches' addresses, every option but ``sm_scale``) was validated before skips
    validation: its spec, config, cache views and launch arguments are kept per signature.
    Under torch.compile the call is one custom operator, ``torch.ops.sparsemla.sparse_mla``
    (runtime/ops.py), which runs this function when the compiled graph runs.
    """
    if torch.compiler.is_compiling():
        return ops.traced_call(q, kv_cache, indices, sm_scale=sm_scale, kv_format=kv_format, d_v=d_v,
                               topk_length=topk_length, out=out, return_lse=return_lse, backend=backend,
                               kv_scale=kv_scale, page_size=page_size, attn_sink=attn_sink,
                               extra_kv_cache=extra_kv_cache, extra_indices=extra_indices,
                               extra_topk_length=extra_topk_length, extra_page_size=extra_page_size,
                               extra_kv_scale=extra_kv_scale, config=config, compute_dtype=compute_dtype,
                               check_indices=check_indices, return_max_logits=return_max_logits)
    key = None
    if backend == "triton" or backend == "auto":
        try:
            # What validity and specialization depend on; sm_scale and the index values are
            # checked per call. Environment variables matter only for auto or on the CPU.
            env = _environ.get("SPARSEMLA_BACKEND") if backend == "auto" else None
            if not q.is_cuda:
                env = (env, _environ.get("TRITON_INTERPRET"), _environ.get("SPARSEMLA_ARCH"))
            key = (env, backend, kv_format, d_v, page_size, kv_scale, return_lse, return_max_logits, config,
                   compute_dtype, check_indices, q.shape, q.stride(), q.dtype, q.device,
                   kv_cache.shape, kv_cache.stride(), kv_cache.dtype, kv_cache.device, kv_cache.data_ptr(),
                   indices.shape, indices.stride(), indices.dtype, indices.device,
                   None if out is None else (out.shape, out.stride(), out.dtype, out.device),
                   None if topk_length is None else (topk_length.shape, topk_length.dtype, topk_length.device),
                   None if attn_sink is None else (attn_sink.shape, attn_sink.dtype, attn_sink.device),
                   None if extra_kv_cache is None else (
                       extra_kv_cache.shape, extra_kv_cache.stride(), extra_kv_cache.dtype, extra_kv_cache.device,
                       extra_kv_cache.data_ptr(), extra_page_size, extra_kv_scale),
                   None if extra_indices is None else (
                       extra_indices.shape, extra_indices.stride(), extra_indices.dtype, extra_indices.device),
                   None if extra_topk_length is None else (
                       extra_topk_length.shape, extra_topk_length.dtype, extra_topk_length.device))
            prepared = _calls.get(key)
        except Exception:  # not tensors, or unhashable options: the checks below report them
            key = prepared = None
        if prepared is not None and triton_backend.run_triton is _run_triton:
            try:
                _calls.move_to_end(key)
            except KeyError:  # evicted since by another thread's call: it still runs
                pass
            _check_sm_scale(sm_scale)
            return prepared(q, indices, sm_scale, out, topk_length, attn_sink, extra_indices, extra_topk_length)

    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {BACKENDS}")
    if return_max_logits not in (False, True):
        raise ValueError(f"return_max_logits={return_max_logits!r}: expected True or False")
    if return_max_logits and extra_kv_cache is not None:
        raise ValueError("return_max_logits=True with extra_kv_cache: max_logits is written for one cache only; "
                         "expected no extra cache")
    if not isinstance(q, torch.Tensor):
        raise TypeError(f"q: expected a torch.Tensor, got {type(q).__name__}")
    if q.dtype not in _DTYPE_NAMES:
        raise TypeError(f"q: dtype {q.dtype}, expected torch.bfloat16, torch.float16 or torch.float32")
    if q.ndim != 3:
        raise ValueError(f"q: shape {tuple(q.shape)}, expected [T, H, d_qk]")
    T, H, d_qk = q.shape
    if kv_format in _FIXED_DIMS and (d_qk, d_v) != _FIXED_DIMS[kv_format]:
        raise ValueError(f"q: last dim {d_qk} with d_v={d_v}; kv_format={kv_format!r} expects "
                         f"d_qk={_FIXED_DIMS[kv_format][0]}, d_v={_FIXED_DIMS[kv_format][1]}")
    _check_sm_scale(sm_scale)
    dev = q.device
    view = describe_cache(_alias(kv_cache), kv_format, d_qk, d_v, page_size=page_size, kv_scale=kv_scale,
                          q_dtype=q.dtype)
    if kv_cache.device != dev:
        raise ValueError(f"kv_cache: on {kv_cache.device}, expected q's device {dev}")
    if not isinstance(indices, torch.Tensor) or indices.ndim != 2:
        raise ValueError(f"indices: expected an int32 tensor [T={T}, topk], got "
                         f"{getattr(indices, 'shape', type(indices).__name__)}")
    topk = indices.shape[1]
    _check_tensor("indices", indices, dtypes=(torch.int32,), shape=(T, topk), device=dev)
    _check_tensor("topk_length", topk_length, dtypes=(torch.int32,), shape=(T,), device=dev,
                  allow_none=True)
    _check_tensor("attn_sink", attn_sink, dtypes=(torch.float32,), shape=(H,), device=dev,
                  allow_none=True)
    xview = None
    if (extra_kv_cache is None) != (extra_indices is None):
        raise ValueError("extra_kv_cache and extra_indices: give both or neither")
    if extra_kv_cache is None and extra_topk_length is not None:
        raise ValueError("extra_topk_length: given without extra_kv_cache")
    if extra_kv_cache is not None:
        xview = describe_cache(_alias(extra_kv_cache), kv_format, d_qk, d_v, name="extra_kv_cache",
                               page_size=extra_page_size, kv_scale=extra_kv_scale, scale_name="extra_kv_scale",
                               q_dtype=q.dtype)
        if extra_kv_cache.device != dev:
            raise ValueError(f"extra_kv_cache: on {extra_kv_cache.device}, expected q's device {dev}")
        if not isinstance(extra_indices, torch.Tensor) or extra_indices.ndim != 2:
            raise ValueError(f"extra_indices: expected an int32 tensor [T={T}, extra_topk]")
        _check_tensor("extra_indices", extra_indices, dtypes=(torch.int32,),
                      shape=(T, extra_indices.shape[1]), device=dev)
        _check_tensor("extra_topk_length", extra_topk_length, dtypes=(torch.int32,), shape=(T,),
                      device=dev, allow_none=True)
    if out is not None:
        _check_tensor("out", out, dtypes=(q.dtype,), shape=(T, H, d_v), device=dev)
    if check_indices is None:
        check_indices = dev.type == "cpu"
    if check_indices:
        _check_index_range("indices", indices, view.num_slots)
        if xview is not None:
            _check_index_range("extra_indices", extra_indices, xview.num_slots)

    rearranged = indices.shape[1] == 0 or (xview is not None and extra_indices.shape[1] == 0)
    if rearranged:
        (indices, topk_length, extra_indices, extra_topk_length), swapped = _nonempty_lists(
            indices, topk_length, extra_indices, extra_topk_length)
        view, xview = (xview, None) if swapped else (view, None if extra_indices is None else xview)
        topk = indices.shape[1]

    if backend == "auto":
        backend = _forced_backend() or ("auto" if dev.type == "cuda" else "torch")
    if backend == "auto" and config is not None:
        backend = "triton"  # a launch config is a Triton one
    if out is None:
        out = torch.empty(T, H, d_v, dtype=q.dtype, device=dev)
    lse, max_logits = _outputs(T, H, dev, return_lse, return_max_logits)

    def reference():
        o, l = sparse_mla_reference(q, view, indices, float(sm_scale), topk_length=topk_length,
                                    attn_sink=attn_sink, extra_view=xview, extra_indices=extra_indices,
                                    extra_topk_length=extra_topk_length, max_logits=max_logits)
        out.copy_(o)
        if lse is not None:
            lse.copy_(l)
        return _result(out, lse, max_logits, return_lse)

    if backend == "torch":
        return reference()
    if backend == "flashinfer" and dev.type != "cuda":
        raise ValueError(f"backend='flashinfer' needs CUDA tensors; q is on {dev}")
    if backend == "triton" and dev.type != "cuda" and not interpreting():
        raise ValueError(f"backend='triton' on a {dev.type} tensor needs TRITON_INTERPRET=1 "
                         f"(Triton's interpreter); use backend='torch' or a CUDA tensor")
    if topk == 0 or T * H == 0:  # no list has a slot, or there is no row to compute: nothing to launch
        _empty_rows(out, lse)
        return _result(out, lse, max_logits, return_lse)
    if compute_dtype is None:
        # bf16 tl.dot is wrong in Triton's interpreter (triton#11584): compute in fp32 there.
        compute_dtype = "fp32" if (q.dtype == torch.float32 or (dev.type != "cuda" and q.dtype == torch.bfloat16)) \
            else _DTYPE_NAMES[q.dtype]
    try:
        spec = KernelSpec(kv_format=kv_format, d_qk=d_qk, d_v=d_v, num_heads=H, topk=topk,
                          page_size=view.page_size, arch=device_arch(dev), q_dtype=_DTYPE_NAMES[q.dtype],
                          compute_dtype=compute_dtype, has_sink=attn_sink is not None,
                          extra_topk=0 if xview is None else extra_indices.shape[1],
                          extra_page_size=1 if xview is None else xview.page_size,
                          return_lse=return_lse or return_max_logits, max_logits=return_max_logits)
    except ValueError as e:
        if backend != "auto":
            raise
        if str(e) not in _warned_fallbacks:  # a CUDA shape no generated kernel covers
            _warned_fallbacks.add(str(e))
            log.warning("sparsemla: no kernel covers this call (%s); using the slow PyTorch reference", e)
        return reference()
    if backend == "auto":
        backend = _auto_backend(spec, T, dev, view, xview)
    _log_choice(spec, backend)
    if backend == "flashinfer":
        from .flashinfer_backend import run_flashinfer
        run_flashinfer(spec, q, view, indices, float(sm_scale), out, lse, topk_length=topk_length,
                       attn_sink=attn_sink, extra_view=xview, extra_indices=extra_indices,
                       extra_topk_length=extra_topk_length)
        return _result(out, lse, max_logits, return_lse)
    from sparsemla.runtime import dispatch
    x_gluon = None  # one Gluon launch, the main list's entry, the extra list's programs as more splits
    if config is None and triton_backend.extra_gluon(spec, T) and not triton_backend.gluon_extra_problem(
            view, xview, indices, extra_indices):
        main_cfg = dispatch.select_config(triton_backend.part_specs(spec)[0], T, dev)
        x_gluon = main_cfg if main_cfg.gluon else None
    parts = config is None and x_gluon is None and triton_backend.extra_parts(spec) \
        and triton_backend.run_triton is _run_triton
    if parts:  # one launch per cache, each with its own config, then a merge
        cfg = tuple(dispatch.select_config(s, T, dev) for s in triton_backend.part_specs(spec))
    else:
        cfg = x_gluon or (config.check(spec) if config is not None else dispatch.select_config(spec, T, dev))
    if triton_backend.run_triton is not _run_triton:  # replaced: it sees the call
        triton_backend.run_triton(spec, cfg, q, view, indices, float(sm_scale), out, lse, topk_length=topk_length,
                                  attn_sink=attn_sink, extra_view=xview, extra_indices=extra_indices,
                                  extra_topk_length=extra_topk_length)
        return _result(out, lse, max_logits, return_lse)

    def launched(cfg):
        """The prepared launch of ``cfg`` (a tuple: one config per cache, PartsLaunch), after its first call."""
        kind = triton_backend.PartsLaunch if isinstance(cfg, tuple) else triton_backend.TritonLaunch
        launch = kind(spec, cfg, q, view, indices, out, lse, topk_length=topk_length, attn_sink=attn_sink,
                      extra_view=xview, extra_indices=extra_indices, extra_topk_length=extra_topk_length)
        launch(q, indices, float(sm_scale), out, lse, topk_length, attn_sink, extra_indices, extra_topk_length)
        return launch

    try:
        launch = launched(cfg)
    except Exception as e:
        # A tuned config that this Triton cannot build or launch (e.g. from a table of another Triton) is reported
        # once and replaced by the default; the default's own error, or a config the caller chose, is raised.
        default = dispatch.untuned_config(spec, T, dev)
        if config is not None or cfg == default:
            raise
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        if (spec.key, str(cfg)) not in _warned_fallbacks:
            _warned_fallbacks.add((spec.key, str(cfg)))
            log.warning("sparsemla: the tuned config %s for %s failed (%s); running the default config %s",
                        cfg, spec.key, why, default)
        cfg = default
        launch = launched(cfg)
    if key is not None and not isinstance(kv_scale, torch.Tensor) and not isinstance(extra_kv_scale, torch.Tensor):
        # (a tensor kv_scale would be keyed by identity, but its value may change in place)
        _remember(key, _Prepared(spec, cfg, view, xview, launch, check_indices, out, return_lse, rearranged),
                  [c for c in (kv_cache, extra_kv_cache) if c is not None])
    return _result(out, lse, max_logits, return_lse)
