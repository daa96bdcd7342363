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
from typing import Optional

import torch

from sparsemla.gen.spec import Config


@torch.library.custom_op("sparsemla::sparse_mla", mutates_args=("out",))
def sparse_mla_op(q: torch.Tensor, kv_cache: torch.Tensor, indices: torch.Tensor, out: torch.Tensor,
                  sm_scale: float, kv_format: str, d_v: int, return_lse: bool, backend: str,
                  topk_length: Optional[torch.Tensor], attn_sink: Optional[torch.Tensor],
                  kv_scale: Optional[float], page_size: Optional[int],
                  extra_kv_cache: Optional[torch.Tensor], extra_indices: Optional[torch.Tensor],
                  extra_topk_length: Optional[torch.Tensor], extra_page_size: Optional[int],
                  extra_kv_scale: Optional[float], config: Optional[str], compute_dtype: Optional[str],
                  check_indices: Optional[bool]) -> torch.Tensor:
    """Writes the attention into ``out``; returns the LSE [T, H] float32, or an empty [0] tensor
    without ``return_lse`` (an operator's outputs have fixed types; none may alias an input)."""
    from .api import sparse_mla
    result = sparse_mla(q, kv_cache, indices, sm_scale=sm_scale, kv_format=kv_format, d_v=d_v,
                        topk_length=topk_length, out=out, return_lse=return_lse, backend=backend,
                        kv_scale=kv_scale, page_size=page_size, attn_sink=attn_sink,
                        extra_kv_cache=extra_kv_cache, extra_indices=extra_indices,
                        extra_topk_length=extra_topk_length, extra_page_size=extra_page_size,
                        extra_kv_scale=extra_kv_scale, config=None if config is None else Config(**json.loads(config)),
                        compute_dtype=compute_dtype, check_indices=check_indices)
    return result[1] if return_lse else q.new_empty((0,), dtype=torch.float32)


@sparse_mla_op.register_fake
def _(q, kv_cache, indices, out, sm_scale, kv_format, d_v, return_lse, backend, topk_length, attn_sink,
      kv_scale, page_size, extra_kv_cache, extra_indices, extra_topk_length, extra_page_size, extra_kv_scale,
      config, compute_dtype, check_indices):
    return q.new_empty(tuple(q.shape[:2]) if return_lse else (0,), dtype=torch.float32)


def _scale(name: str, value):
    """A per-tensor scale as the operator's float: a tensor's value cannot be read while tracing."""
    if isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: a tensor under torch.compile (its value would be read on the host); "
                        f"pass a Python float")
    return None if value is None else float(value)


def traced_call(q, kv_cache, indices, *, sm_scale, kv_format, d_v, topk_length, out, return_lse, backend,
                kv_scale, page_size, attn_sink, extra_kv_cache, extra_indices, extra_topk_length,
                extra_page_size, extra_kv_scale, config, compute_dtype, check_indices):
    """``sparse_mla``'s body while torch.compile traces it: allocate, then one operator node."""
    if not isinstance(q, torch.Tensor) or q.ndim != 3:
        raise ValueError(f"q: expected a tensor [T, H, d_qk], got {getattr(q, 'shape', type(q).__name__)}")
    if out is None:
        out = q.new_empty((q.shape[0], q.shape[1], d_v))
    lse = torch.ops.sparsemla.sparse_mla(
        q, kv_cache, indices, out, float(sm_scale), kv_format, d_v, return_lse, backend, topk_length, attn_sink,
        _scale("kv_scale", kv_scale), page_size, extra_kv_cache, extra_indices, extra_topk_length,
        extra_page_size, _scale("extra_kv_scale", extra_kv_scale),
        None if config is None else json.dumps(asdict(config)), compute_dtype, check_indices)
    return (out, lse) if return_lse else out
