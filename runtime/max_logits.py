"""``sparse_max_logits``: the largest scaled score of each token and head over its list's valid entries, which
FlashMLA's sparse prefill returns beside its output (``compat.flash_mla_sparse_fwd``).

CUDA tensors run the generated Triton kernel (``gen/max_logits.py``, ``templates/sparse_max_logits.py.jinja``): one
read of the selected rows, the score dots in q's dtype with float32 accumulation. CPU tensors run it under
TRITON_INTERPRET=1 and otherwise the PyTorch reference below. The reference also runs for a call being traced by
torch.compile, for every call with SPARSEMLA_MAX_LOGITS_KERNEL=0, and where the default kernel fails to build or
launch (reported once). (Checked in the interpreter and built for sm90/sm120/sm121; not yet run on a GPU:
benchmarks/calls/max_logits_gpu.py checks and times it there.)
"""
from __future__ import annotations

import logging
import os

import torch

from sparsemla.gen.max_logits import MaxLogitsConfig, MaxLogitsSpec
from sparsemla.gen.render import interpreting, load_module

from .api import _check_sm_scale, device_arch
from .device_guard import on_tensor_device
from .launch import launch

_FLOAT = (torch.bfloat16, torch.float16, torch.float32)
_CDT = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_CHUNK_BYTES = 1 << 28  # the reference's gathered rows per step
_failed: set = set()  # spec keys whose default kernel failed to build or launch (reported once)
log = logging.getLogger("sparsemla")


def sparse_max_logits_reference(q, kv, indices, sm_scale, topk_length=None):
    """PyTorch version of ``sparse_max_logits``: chunked over tokens (~256 MB of gathered float32 rows a chunk)."""
    T, H, d_qk = q.shape
    K, N = indices.shape[1], kv.shape[0]
    out = torch.full((T, H), float("-inf"), dtype=torch.float32, device=q.device)
    if K == 0 or T == 0:
        return out
    chunk = max(1, _CHUNK_BYTES // (K * (d_qk + H) * 4))
    pos = torch.arange(K, device=indices.device)
    for t0 in range(0, T, chunk):
        idx = indices[t0:t0 + chunk]
        valid = (idx >= 0) & (idx < N)
        if topk_length is not None:
            valid &= pos[None, :] < topk_length[t0:t0 + chunk, None]
        rows = kv.index_select(0, torch.where(valid, idx, 0).reshape(-1)).view(idx.shape[0], K, d_qk)
        scores = torch.bmm(q[t0:t0 + chunk].float(), rows.float().transpose(1, 2)) * sm_scale
        out[t0:t0 + chunk] = scores.masked_fill_(~valid[:, None, :], float("-inf")).amax(-1)
    return out


def _check(name, t, shape, dtypes, device):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        raise TypeError(f"{name}: dtype {t.dtype}, expected {' or '.join(map(str, dtypes))}")
    if t.ndim != len(shape) or any(e is not None and s != e for s, e in zip(t.shape, shape)):
        want = ", ".join("*" if e is None else str(e) for e in shape)
        raise ValueError(f"{name}: shape {tuple(t.shape)}, expected ({want}{',' if len(shape) == 1 else ''})")
    if t.device != device:
        raise ValueError(f"{name}: on {t.device}, expected q's device {device}")


@on_tensor_device
def sparse_max_logits(q, kv, indices, sm_scale, topk_length=None, *, config: MaxLogitsConfig | None = None):
    """float32 [T, H]: ``sm_scale * max_j q[t, h] . kv[indices[t, j]]`` over the valid entries (j below
    topk_length[t] where given, 0 <= indices[t, j] < kv.shape[0]); -inf where a token has none.

    q: [T, H, d_qk] bf16/fp16/fp32; kv: [slots, d_qk] of q's dtype; indices: [T, topk] int32; topk_length:
    [T] int32 (< 0 as 0). ``config`` (a MaxLogitsConfig) overrides the arch's default tiling.
    """
    _check("q", q, (None, None, None), _FLOAT, q.device if isinstance(q, torch.Tensor) else None)
    T, H, d_qk = q.shape
    dev = q.device
    _check("kv", kv, (None, d_qk), (q.dtype,), dev)
    _check("indices", indices, (T, None), (torch.int32,), dev)
    if topk_length is not None:
        _check("topk_length", topk_length, (T,), (torch.int32,), dev)
    _check_sm_scale(sm_scale)  # (positive: the kernel scales the largest dot)
    if config is not None and not isinstance(config, MaxLogitsConfig):
        raise TypeError(f"config: expected a MaxLogitsConfig or None, got {type(config).__name__}")
    if (not (dev.type == "cuda" or interpreting()) or torch.compiler.is_compiling()
            or d_qk % 16 or not 16 <= d_qk <= 1024 or os.environ.get("SPARSEMLA_MAX_LOGITS_KERNEL") == "0"):
        return sparse_max_logits_reference(q, kv, indices, sm_scale, topk_length)
    out = torch.empty((T, H), dtype=torch.float32, device=dev)
    if T * H == 0:
        return out
    if q.stride(2) != 1:
        q = q.contiguous()
    if kv.stride(1) != 1:
        kv = kv.contiguous()
    # bfloat16 dots are wrong under the interpreter (Triton issue 11584): it computes in float32 there.
    cdt = "fp32" if dev.type != "cuda" and q.dtype == torch.bfloat16 else _CDT[q.dtype]
    spec = MaxLogitsSpec(d_qk, cdt, device_arch(dev))
    if config is None and spec.key in _failed:
        return sparse_max_logits_reference(q, kv, indices, sm_scale, topk_length)
    cfg = config or spec.default_config(H)
    try:
        launch(load_module(spec).sparse_max_logits_kernel, (T * -(-H // cfg.block_h),),
               q, q.stride(0), q.stride(1), kv, kv.stride(0), indices, indices.stride(0), indices.stride(1),
               topk_length if topk_length is not None else indices, out, out.stride(0), out.stride(1),
               H, kv.shape[0], indices.shape[1], float(sm_scale),
               HAS_LEN=topk_length is not None, BLOCK_H=cfg.block_h, BLOCK_N=cfg.block_n,
               NUM_STAGES=cfg.num_stages, num_warps=cfg.num_warps)
    except Exception as e:
        # The default tiling that this Triton or GPU cannot build or launch is reported once and the PyTorch pass runs
        # from then on (the same values, slower); a config the caller chose raises.
        if config is not None:
            raise
        _failed.add(spec.key)
        log.warning("sparsemla: the max_logits kernel %s with %s failed (%s: %s); running the PyTorch pass instead",
                    spec.key, cfg, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
        return sparse_max_logits_reference(q, kv, indices, sm_scale, topk_length)
    return out
