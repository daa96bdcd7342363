"""The PyTorch fp32 reference of sparse MLA attention, chunked over query tokens.

It gathers and dequantizes each token's selected rows (never the whole cache), so a
4096-token prefill over top-k 2048 needs a few hundred MB, not tens of GB.
"""
from __future__ import annotations

import math

import torch

from .kvcache import KVCacheView, gather_rows, valid_mask

_CHUNK_BYTES = 1 << 28


def sparse_mla_reference(q: torch.Tensor, view: KVCacheView, indices: torch.Tensor, sm_scale: float,
                         *, topk_length=None, attn_sink=None, extra_view: KVCacheView | None = None,
                         extra_indices=None, extra_topk_length=None, max_logits=None):
    """Returns (out float32 [T, H, d_v], lse float32 [T, H]); lse excludes the sink, +inf if empty. A
    ``max_logits`` tensor [T, H] receives the largest scaled score (-inf if empty)."""
    T, H, _ = q.shape
    d_v = view.layout.d_v
    width = indices.shape[1] + (extra_indices.shape[1] if extra_indices is not None else 0)
    chunk = max(1, _CHUNK_BYTES // max(1, width * (view.layout.d_qk + H) * 4))
    out = torch.empty(T, H, d_v, dtype=torch.float32, device=q.device)
    lse = torch.empty(T, H, dtype=torch.float32, device=q.device)
    for t0 in range(0, T, chunk):
        t1 = min(T, t0 + chunk)
        idx = indices[t0:t1]
        kv = gather_rows(view, idx)
        valid = valid_mask(idx, None if topk_length is None else topk_length[t0:t1], view.num_slots)
        if extra_view is not None:
            xidx = extra_indices[t0:t1]
            kv = torch.cat([kv, gather_rows(extra_view, xidx)], dim=1)
            xlen = None if extra_topk_length is None else extra_topk_length[t0:t1]
            valid = torch.cat([valid, valid_mask(xidx, xlen, extra_view.num_slots)], dim=1)
        kv = torch.where(valid[..., None], kv, 0.0)  # rows cut by topk_length may hold NaN
        qf = q[t0:t1].float()[..., :kv.shape[-1]]
        scores = torch.einsum("thd,tkd->thk", qf, kv) * sm_scale
        scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
        l = torch.logsumexp(scores, dim=-1)  # [c, H], -inf for rows with nothing valid
        denom = l
        if attn_sink is not None:
            denom = torch.logaddexp(l, attn_sink.float()[None, :].expand_as(l))
        empty = l == float("-inf")
        w = torch.exp(scores - torch.where(empty, 0.0, denom)[..., None])
        w = torch.where(valid[:, None, :], w, 0.0)  # also drops NaN from +inf sinks
        o = torch.einsum("thk,tkv->thv", w, kv[..., :d_v])
        out[t0:t1] = torch.where(empty[..., None], 0.0, o)
        lse[t0:t1] = torch.where(empty, math.inf, l)
        if max_logits is not None:
            max_logits[t0:t1] = scores.amax(-1)
    return out, lse
