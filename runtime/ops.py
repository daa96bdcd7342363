"""``sparse_mla`` as a PyTorch custom operator (``torch.ops.sparsemla.sparse_mla``), for torch.compile.

Dynamo cannot trace into ``sparse_mla``: its validation reads index values, and its Triton path keeps
prepared launches in Python dicts. Under torch.compile, ``sparse_mla`` therefore allocates its outputs
and calls this operator, which the compiled graph holds as one opaque node (no graph break, also under
``fullgraph=True``), with a fake implementation that gives the output shapes. When the graph runs, the
operator runs ``sparse_mla`` eagerly: the same dispatch, tuned configs and checks as an eager call.
"""
from __future__ import annotations

import json
from dataclasses import asdict

import torch

from sparsemla.gen.spec import Config


# The schema's argument order is the implementation's; ``out`` is written in place (``Tensor(a!)``).
_SCHEMA = ("sparse_mla(Tensor q, Tensor kv_cache, Tensor indices, Tensor(a!) out, float sm_scale, str kv_format, "
           "int d_v, bool return_lse, str backend, Tensor? topk_length, Tensor? attn_sink, float? kv_scale, "
           "int? page_size, Tensor? extra_kv_cache, Tensor? extra_indices, Tensor? extra_topk_length, "
           "int? extra_page_size, float? extra_kv_scale, str? config, str? compute_dtype, bool? check_indices, "
           "bool return_max_logits=False) -> Tensor")

# Defined with the low-level Library API rather than ``torch.library.custom_op``: for an operator that
# mutates an argument, custom_op wraps every call in Python layers whose schema walk is quadratic in the
# argument count (~120 us a call for these 22 arguments on a CPU core, against ~11 us here), paid by every
# compiled graph that runs it. The kernel is registered for every backend at once; there is no autograd
# formula, so a backward through it raises.
_lib = torch.library.Library("sparsemla", "DEF")
_lib.define(_SCHEMA)


def sparse_mla_op(q, kv_cache, indices, out, sm_scale, kv_format, d_v, return_lse, backend, topk_length,
                  attn_sink, kv_scale, page_size, extra_kv_cache, extra_indices, extra_topk_length,
                  extra_page_size, extra_kv_scale, config, compute_dtype, check_indices, return_max_logits=False):
    """Writes the attention into ``out``; returns the LSE [T, H] float32, or an empty [0] tensor
    without ``return_lse`` (an operator's outputs have fixed types; none may alias an input); with
    ``return_max_logits`` [T, H, 2]: the LSE and max_logits of each head."""
    from .api import sparse_mla
    result = sparse_mla(q, kv_cache, indices, sm_scale=sm_scale, kv_format=kv_format, d_v=d_v,
                        topk_length=topk_length, out=out, return_lse=return_lse or return_max_logits,
                        backend=backend, kv_scale=kv_scale, page_size=page_size, attn_sink=attn_sink,
                        extra_kv_cache=extra_kv_cache, extra_indices=extra_indices,
                        extra_topk_length=extra_topk_length, extra_page_size=extra_page_size,
                        extra_kv_scale=extra_kv_scale, config=None if config is None else Config(**json.loads(config)),
                        compute_dtype=compute_dtype, check_indices=check_indices, return_max_logits=return_max_logits)
    if not out.is_inference():  # what an in-place op owes autograd's bookkeeping (custom_op's wrapper did it)
        torch.autograd.graph.increment_version(out)
    if return_max_logits:
        # The [T, H, 2] buffer both are views of (runtime/api._outputs), as it is: no copy. (Fake tensors, as
        # opcheck runs this body with, keep no _base: a stacked copy there.)
        pair = result[1]._base
        return pair if pair is not None and pair.shape == (*q.shape[:2], 2) else torch.stack(result[1:], -1)
    return result[1] if return_lse else q.new_empty((0,), dtype=torch.float32)


_lib.impl("sparse_mla", sparse_mla_op, "CompositeExplicitAutograd")


@torch.library.register_fake("sparsemla::sparse_mla", lib=_lib)
def _(q, kv_cache, indices, out, sm_scale, kv_format, d_v, return_lse, backend, topk_length, attn_sink,
      kv_scale, page_size, extra_kv_cache, extra_indices, extra_topk_length, extra_page_size, extra_kv_scale,
      config, compute_dtype, check_indices, return_max_logits=False):
    shape = (*q.shape[:2], 2) if return_max_logits else tuple(q.shape[:2]) if return_lse else (0,)
    return q.new_empty(shape, dtype=torch.float32)


def _scale(name: str, value):
    """A per-tensor scale as the operator's float: a tensor's value cannot be read while tracing."""
    if isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: a tensor under torch.compile (its value would be read on the host); "
                        f"pass a Python float")
    return None if value is None else float(value)


def traced_call(q, kv_cache, indices, *, sm_scale, kv_format, d_v, topk_length, out, return_lse, backend,
                kv_scale, page_size, attn_sink, extra_kv_cache, extra_indices, extra_topk_length,
                extra_page_size, extra_kv_scale, config, compute_dtype, check_indices, return_max_logits=False):
    """``sparse_mla``'s body while torch.compile traces it: allocate, then one operator node."""
    if not isinstance(q, torch.Tensor) or q.ndim != 3:
        raise ValueError(f"q: expected a tensor [T, H, d_qk], got {getattr(q, 'shape', type(q).__name__)}")
    if out is None:
        out = q.new_empty((q.shape[0], q.shape[1], d_v))
    lse = torch.ops.sparsemla.sparse_mla(
        q, kv_cache, indices, out, float(sm_scale), kv_format, d_v, return_lse, backend, topk_length, attn_sink,
        _scale("kv_scale", kv_scale), page_size, extra_kv_cache, extra_indices, extra_topk_length,
        extra_page_size, _scale("extra_kv_scale", extra_kv_scale),
        None if config is None else json.dumps(asdict(config)), compute_dtype, check_indices, return_max_logits)
    if return_max_logits:
        return (out, lse[..., 0], lse[..., 1]) if return_lse else (out, lse[..., 1])
    return (out, lse) if return_lse else out
