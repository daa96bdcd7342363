"""Launch a generated sparse-MLA module: argument marshalling, grid, split-K workspace."""
from __future__ import annotations

import torch

from sparsemla.gen.render import load_module
from sparsemla.gen.spec import Config, KernelSpec, next_pow2

from .kvcache import KVCacheView

_workspaces: dict = {}
# The attention kernel of the latest launch (a CompiledKernel: n_regs, n_spills, metadata.shared),
# for benchmarks that report resources next to timings.
last_compiled = None


def workspace(device: torch.device, numel: int) -> torch.Tensor:
    """A float32 scratch buffer reused across calls (grown, never shrunk), so steady-state
    calls allocate nothing and can be captured in a CUDA graph."""
    buf = _workspaces.get(device)
    if buf is None or buf.numel() < numel:
        buf = torch.empty(max(numel, 1), dtype=torch.float32, device=device)
        _workspaces[device] = buf
    return buf[:numel]


def _cache_args(view: KVCacheView, indices: torch.Tensor, topk_length, dummy) -> list:
    args = [view.views[v] for v in view.layout.views]
    args += [view.stride_page, view.stride_row, view.num_slots,
             indices, indices.stride(0), indices.stride(1),
             topk_length if topk_length is not None else dummy, view.kv_scale]
    return args


def run_triton(spec: KernelSpec, config: Config, q: torch.Tensor, view: KVCacheView,
               indices: torch.Tensor, sm_scale: float, out: torch.Tensor, lse: torch.Tensor | None,
               *, topk_length=None, attn_sink=None, extra_view: KVCacheView | None = None,
               extra_indices=None, extra_topk_length=None) -> None:
    """Write attention for ``q`` into ``out`` (and ``lse``); inputs are already validated."""
    mod = load_module(spec)
    T, H, _ = q.shape
    if T == 0:
        return
    S = config.num_splits
    head_blocks = -(-H // config.block_h)
    dummy = q
    args = [q, q.stride(0), q.stride(1), q.stride(2)]
    args += _cache_args(view, indices, topk_length, dummy)
    flags = [topk_length is not None]
    if extra_view is not None:
        args += _cache_args(extra_view, extra_indices, extra_topk_length, dummy)
        flags.append(extra_topk_length is not None)
    lse_t = lse if lse is not None else dummy
    lse_strides = (lse.stride(0), lse.stride(1)) if lse is not None else (0, 0)
    if S > 1:
        ws = workspace(q.device, T * H * S * (spec.d_v + 1))
        o_part, lse_part = ws[: T * H * S * spec.d_v], ws[T * H * S * spec.d_v:]
    else:
        o_part = lse_part = dummy
    sink = attn_sink if attn_sink is not None else dummy
    args += [sink, out, out.stride(0), out.stride(1), out.stride(2), lse_t, *lse_strides,
             o_part, lse_part, float(sm_scale), H, S, *flags]
    global last_compiled
    last_compiled = mod.sparse_mla_fwd[(T * head_blocks * S,)](
        *args, BLOCK_H=config.block_h, BLOCK_N=config.block_n, SPLIT_K=S > 1,
        num_warps=config.num_warps, num_stages=config.num_stages)
    if S > 1:
        s_p2 = next_pow2(S)
        block_dv = max(16, min(spec.d_v, 8192 // s_p2))
        mod.sparse_mla_combine[(T * H, spec.d_v // block_dv)](
            o_part, lse_part, sink, out, out.stride(0), out.stride(1), out.stride(2),
            lse_t, *lse_strides, H, NUM_SPLITS=S, SPLITS_P2=s_p2, BLOCK_DV=block_dv,
            num_warps=4)
