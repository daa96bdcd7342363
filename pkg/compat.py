"""FlashMLA-compatible entry points, so SGLang/vLLM-style code switches by import:

    from sparsemla.compat import flash_mla_with_kvcache, flash_mla_sparse_fwd, get_mla_metadata

Both run ``sparsemla.sparse_mla`` (backend "auto": the tuned Triton/FlashInfer choice on CUDA,
the PyTorch reference on the CPU). Conventions follow FlashMLA: lse is a natural log without
the sink, +inf for a query with nothing valid (whose output is 0). Unlike FlashMLA, any head
count works (1..128 and more, no padding to 64) and no scheduling metadata is needed.
"""
from __future__ import annotations

import dataclasses

import torch

from sparsemla.gen.layout import DS_MLA_ROW_BYTES, M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES
from sparsemla.runtime.api import sparse_mla

_FLOAT = (torch.bfloat16, torch.float16, torch.float32)
_FP8 = (torch.uint8, torch.float8_e4m3fn)


@dataclasses.dataclass
class MLASchedMeta:
    """Placeholder for FlashMLA's tile-scheduler metadata: sparsemla needs none (its kernels
    schedule from the shapes alone), so this holds nothing and may be reused freely."""


def get_mla_metadata(*args, **kwargs):
    """FlashMLA-compatible ``get_mla_metadata``: returns ``(MLASchedMeta(), None)``, whatever the
    arguments (old- and new-style calls alike). No scheduling metadata is needed."""
    return MLASchedMeta(), None


def _check(name, t, ndim_desc, ndims, dtypes=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.ndim not in ndims:
        raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {ndim_desc}")
    if dtypes is not None and t.dtype not in dtypes:
        raise TypeError(f"{name}: dtype {t.dtype}, expected {' or '.join(map(str, dtypes))}")


def _shape(name, t, expected, desc):
    if tuple(t.shape) != tuple(expected):
        raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {desc} = {tuple(expected)}")


def _cache_format(name: str, cache, is_fp8_kvcache: bool) -> str:
    """The sparsemla kv_format of a FlashMLA-style cache [num_blocks, page_size, 1, bytes_or_dim]."""
    _check(name, cache, "[num_blocks, page_size, 1, bytes_or_dim]", (3, 4))
    last = cache.shape[-1]
    if cache.dtype in _FLOAT:
        if is_fp8_kvcache:
            raise ValueError(f"is_fp8_kvcache=True but {name} has dtype {cache.dtype}")
        return "auto"
    if cache.dtype not in _FP8:
        raise TypeError(f"{name}: dtype {cache.dtype}, expected bf16/fp16/fp32 or uint8/float8_e4m3fn")
    if not is_fp8_kvcache:
        raise ValueError(f"is_fp8_kvcache=False but {name} holds packed fp8 rows (dtype {cache.dtype})")
    if last == DS_MLA_ROW_BYTES:
        return "fp8_ds_mla"
    if last == M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES:
        return "model1"
    raise ValueError(f"{name}: last dim {last}; an fp8 cache has {DS_MLA_ROW_BYTES}-byte rows (fp8_ds_mla, "
                     f"DeepSeek-V3.2) or {M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES}-byte rows in pages "
                     f"(model1, DeepSeek-V4)")


def _per_token(name, lengths, b, s_q):
    """FlashMLA's per-batch lengths [b] (or [b, s_q]) as one length per query token [b * s_q]."""
    if lengths is None:
        return None
    _check(name, lengths, f"[b={b}] or [b, s_q={s_q}]", (1, 2), (torch.int32,))
    if lengths.ndim == 1:
        _shape(name, lengths, (b,), "[b]")
        return lengths if s_q == 1 else lengths[:, None].expand(b, s_q).reshape(-1)
    _shape(name, lengths, (b, s_q), "[b, s_q]")
    return lengths.reshape(-1)


_RENAMES = (("extra_kv_cache", "extra_k_cache"), ("extra_indices", "extra_indices_in_kvcache"),
            ("kv_cache", "k_cache"))


def _renamed(e: Exception, renames=_RENAMES) -> Exception:
    """``e`` with sparse_mla's argument names replaced by FlashMLA's."""
    msg = str(e)
    for ours, theirs in renames:
        if msg.startswith(ours):
            return type(e)(theirs + msg[len(ours):])
    return e


def _flat_out(out, q, shape, desc, flat_shape):
    """``out`` ([*shape] of q's dtype and device, checked) as the [T, H, d_v] tensor sparse_mla writes: a view of
    it, or None where its strides allow no such view (then the caller copies the result in)."""
    if out is None:
        return None
    _check("out", out, desc, (len(shape),), (q.dtype,))
    _shape("out", out, shape, desc)
    if out.device != q.device:
        raise ValueError(f"out: on {out.device}, expected q's device {q.device}")
    try:
        return out.view(flat_shape)
    except RuntimeError:
        return None


def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, tile_scheduler_metadata=None,
                           num_splits=None, softmax_scale=None, causal=False, is_fp8_kvcache=False,
                           indices=None, attn_sink=None, extra_k_cache=None, extra_indices_in_kvcache=None,
                           topk_length=None, extra_topk_length=None, *, out=None):
    """FlashMLA's sparse decode: ``(out [b, s_q, h, head_dim_v], lse [b, h, s_q] float32)``.

    q: [b, s_q, h, d_qk]; indices: [b, s_q, topk] int32 global slot ids
    (``page * page_size + offset``), -1 = skip; k_cache: [num_blocks, page_size, 1, X]:
    bf16 with X = d_qk ("auto"), or uint8/fp8 (``is_fp8_kvcache=True``) with X = 656
    ("fp8_ds_mla") or 584 with a page stride of ``model1_page_bytes(page_size)`` ("model1",
    the view FlashMLA takes of DeepSeek-V4 pages). topk_length / extra_topk_length: [b] int32
    (or [b, s_q]). block_table, cache_seqlens, tile_scheduler_metadata and num_splits are
    accepted and ignored (sparse decode does not read them). out has q's dtype; ``out=`` (keyword
    only, as vLLM's DeepSeek-V4 code passes it) is a preallocated [b, s_q, h, head_dim_v] tensor of
    q's dtype that receives it and is returned.
    """
    if indices is None:
        raise NotImplementedError("indices=None: sparsemla implements FlashMLA's sparse decode only; "
                                  "pass indices [b, s_q, topk] of global slot ids")
    if causal:
        raise ValueError("causal=True: sparse attention takes its mask from indices; expected causal=False")
    _check("q", q, "[b, s_q, h, d_qk]", (4,))
    b, s_q, h, d_qk = q.shape
    _check("indices", indices, "[b, s_q, topk]", (3,), (torch.int32,))
    _shape("indices", indices, (b, s_q, indices.shape[-1]), "[b, s_q, topk]")
    if not isinstance(head_dim_v, int) or head_dim_v < 1:
        raise ValueError(f"head_dim_v={head_dim_v!r}: expected a positive int")
    kv_format = _cache_format("k_cache", k_cache, is_fp8_kvcache)
    x_idx = None
    if (extra_k_cache is None) != (extra_indices_in_kvcache is None):
        raise ValueError("extra_k_cache and extra_indices_in_kvcache: give both or neither")
    if extra_k_cache is not None:
        x_format = _cache_format("extra_k_cache", extra_k_cache, is_fp8_kvcache)
        if x_format != kv_format:
            raise ValueError(f"extra_k_cache: format {x_format!r} differs from k_cache's {kv_format!r}")
        _check("extra_indices_in_kvcache", extra_indices_in_kvcache, "[b, s_q, extra_topk]", (3,),
               (torch.int32,))
        x_topk = extra_indices_in_kvcache.shape[-1]
        _shape("extra_indices_in_kvcache", extra_indices_in_kvcache, (b, s_q, x_topk), "[b, s_q, extra_topk]")
        x_idx = extra_indices_in_kvcache.reshape(b * s_q, x_topk)
    if softmax_scale is None:
        softmax_scale = d_qk ** -0.5
    out_flat = _flat_out(out, q, (b, s_q, h, head_dim_v), "[b, s_q, h, head_dim_v]", (b * s_q, h, head_dim_v))
    try:
        res, lse = sparse_mla(
            q.reshape(b * s_q, h, d_qk), k_cache, indices.reshape(b * s_q, indices.shape[-1]),
            sm_scale=softmax_scale, kv_format=kv_format, d_v=head_dim_v,
            topk_length=_per_token("topk_length", topk_length, b, s_q), return_lse=True,
            attn_sink=attn_sink, extra_kv_cache=extra_k_cache, extra_indices=x_idx,
            extra_topk_length=_per_token("extra_topk_length", extra_topk_length, b, s_q), out=out_flat)
    except (ValueError, TypeError) as e:
        raise _renamed(e) from None
    res = res.view(b, s_q, h, head_dim_v)
    if out is not None and out_flat is None:
        res = out.copy_(res)
    return (out if out is not None else res), lse.view(b, s_q, h).transpose(1, 2).contiguous()


def flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None, indexer_topk=0,
                         *, out=None, return_max_logits=True):
    """FlashMLA's sparse prefill: ``(out [s_q, h, d_v], max_logits [s_q, h], lse [s_q, h])``, and
    ``lse_indexer [s_q, h]`` fourth where ``indexer_topk`` > 0.

    q: [s_q, h, d_qk]; kv: [s_kv, 1, d_qk] (or [s_kv, d_qk]) of q's dtype; indices:
    [s_q, 1, topk] (or [s_q, topk]) int32 rows of kv, -1 or >= s_kv = skip; topk_length:
    [s_q] int32. max_logits is the max of the scaled scores over the valid entries (-inf
    when none), written by the attention kernel itself (``sparse_mla(return_max_logits=True)``:
    one atomic max a program); ``return_max_logits=False`` returns None in its place.
    ``indexer_topk`` (FlashMLA's, for DeepSeek-V4's indexer loss): lse_indexer is the LSE over the
    first indexer_topk entries of each row's list (within topk_length), computed by a second
    attention call over those entries. ``out=`` (keyword only, as vLLM's DeepSeek-V4 code passes
    it): a preallocated [s_q, h, d_v] tensor of q's dtype that receives the output, returned first.
    """
    _check("q", q, "[s_q, h, d_qk]", (3,))
    s_q = q.shape[0]
    _check("kv", kv, "[s_kv, 1, d_qk]", (2, 3))
    if kv.ndim == 3:
        if kv.shape[1] != 1:
            raise ValueError(f"kv: shape {tuple(kv.shape)}, expected [s_kv, 1, d_qk] (one kv head)")
        kv = kv[:, 0]
    _check("indices", indices, "[s_q, 1, topk]", (2, 3), (torch.int32,))
    if indices.ndim == 3:
        _shape("indices", indices, (s_q, 1, indices.shape[-1]), "[s_q, 1, topk]")
        indices = indices[:, 0]
    _shape("indices", indices, (s_q, indices.shape[-1]), "[s_q, topk]")
    if isinstance(indexer_topk, bool) or not isinstance(indexer_topk, int) or indexer_topk < 0:
        raise ValueError(f"indexer_topk={indexer_topk!r}: expected an int >= 0 (0: no lse_indexer)")
    try:
        out, lse, *max_logits = sparse_mla(q, kv, indices, sm_scale=sm_scale, kv_format="auto", d_v=d_v,
                                           topk_length=topk_length, return_lse=True, attn_sink=attn_sink,
                                           check_indices=False, out=out, return_max_logits=bool(return_max_logits))
        if indexer_topk:
            # The first indexer_topk entries of each list, within its topk_length: LSE excludes the sink.
            first = min(indexer_topk, indices.shape[1])
            first_len = None if topk_length is None else topk_length.clamp(max=first)
            _, lse_indexer = sparse_mla(q, kv, indices[:, :first], sm_scale=sm_scale, kv_format="auto", d_v=d_v,
                                        topk_length=first_len, return_lse=True, check_indices=False)
    except (ValueError, TypeError) as e:
        raise _renamed(e, (("kv_cache", "kv"),)) from None
    max_logits = max_logits[0] if max_logits else None
    return (out, max_logits, lse, lse_indexer) if indexer_topk else (out, max_logits, lse)
