"""Launch a generated sparse-MLA module: argument marshalling, grid, split-K workspace.

``TritonLaunch`` prepares everything a launch needs that the call's signature fixes (the
kernels, grids, constexprs, cache views and every stride) once; calling it inserts only
the per-call tensors and ``sm_scale``. ``run_triton`` prepares and launches in one go.
"""
from __future__ import annotations

import torch

from sparsemla.gen.render import load_module
from sparsemla.gen.spec import Config, KernelSpec, next_pow2

from .kvcache import KVCacheView

_workspaces: dict = {}
# The attention kernel of the latest launch (a CompiledKernel: n_regs, n_spills, metadata.shared),
# for benchmarks that report resources next to timings.
last_compiled = None

# The per-call values a launch takes, in TritonLaunch.__call__'s order; an absent optional
# tensor is replaced by q (a pointer the kernel never reads).
_Q, _IDX, _TOPK_LEN, _SINK, _OUT, _LSE, _X_IDX, _X_TOPK_LEN, _SCALE = range(9)


def workspace(device: torch.device, numel: int) -> torch.Tensor:
    """A float32 scratch buffer reused across calls (grown, never shrunk), so steady-state
    calls allocate nothing and can be captured in a CUDA graph."""
    buf = _workspaces.get(device)
    if buf is None or buf.numel() < numel:
        buf = torch.empty(max(numel, 1), dtype=torch.float32, device=device)
        _workspaces[device] = buf
    return buf[:numel]


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

    def cache(self, view: KVCacheView, indices: torch.Tensor, idx: int, topk_len: int, has_topk_len: bool):
        self.fixed(*(view.views[v] for v in view.layout.views), view.stride_page, view.stride_row,
                   view.num_slots)
        self.per_call(idx)
        self.fixed(indices.stride(0), indices.stride(1))
        self.per_call(topk_len, has_topk_len)
        self.fixed(view.kv_scale)


class TritonLaunch:
    """``run_triton`` for one argument signature, prepared once and called per call.

    Built from example arguments: only their shapes, strides, dtypes and devices (and the
    cache views themselves) are kept, never the per-call tensors. A call must pass tensors
    of the same signature, and None exactly where the example had None.
    """

    def __init__(self, spec: KernelSpec, config: Config, q: torch.Tensor, view: KVCacheView,
                 indices: torch.Tensor, out: torch.Tensor, lse: torch.Tensor | None, *, topk_length=None,
                 attn_sink=None, extra_view: KVCacheView | None = None, extra_indices=None,
                 extra_topk_length=None):
        mod = load_module(spec)
        T, H, _ = q.shape
        self.fwd = self.combine = None
        if T == 0:
            return
        S = config.num_splits
        self.device = q.device
        self.ws_numel = T * H * S * (spec.d_v + 1)  # the split-K workspace (S > 1)
        lse_strides = (lse.stride(0), lse.stride(1)) if lse is not None else (0, 0)

        fwd = _Args()
        fwd.per_call(_Q)
        fwd.fixed(q.stride(0), q.stride(1), q.stride(2))
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
        self.ws_pos = len(fwd.values)  # o_part, lse_part: the split-K workspace, else unused (q)
        if S > 1:
            fwd.fixed(None, None)  # set by _attach_workspace
        else:
            fwd.per_call(_Q)
            fwd.per_call(_Q)
        fwd.per_call(_SCALE)
        fwd.fixed(H, S, *flags)
        self.fwd_args = fwd
        self.fwd_kw = dict(BLOCK_H=config.block_h, BLOCK_N=config.block_n, SPLIT_K=S > 1,
                           INDEX_PREFETCH=config.index_prefetch,
                           num_warps=config.num_warps, num_stages=config.num_stages)
        head_blocks = -(-H // config.block_h)
        self.fwd = mod.sparse_mla_fwd[(T * head_blocks * S,)]  # grid and proxy made once
        if S == 1:
            return
        comb = _Args()
        comb.fixed(None, None)  # o_part, lse_part, set by _attach_workspace
        comb.per_call(_SINK, attn_sink is not None)
        comb.per_call(_OUT)
        comb.fixed(out.stride(0), out.stride(1), out.stride(2))
        comb.per_call(_LSE, lse is not None)
        comb.fixed(*lse_strides, H)
        self.comb_args = comb
        s_p2 = next_pow2(S)
        block_dv = max(16, min(spec.d_v, 8192 // s_p2))
        self.comb_kw = dict(NUM_SPLITS=S, SPLITS_P2=s_p2, BLOCK_DV=block_dv, num_warps=4)
        self.combine = mod.sparse_mla_combine[(T * H, spec.d_v // block_dv)]
        self.o_numel = T * H * S * spec.d_v
        self._attach_workspace()

    def _attach_workspace(self) -> None:
        """Point o_part and lse_part at the shared workspace (again, after a launch grew it)."""
        ws = workspace(self.device, self.ws_numel)
        self.ws_buf = _workspaces[self.device]
        parts = ws[: self.o_numel], ws[self.o_numel:]
        self.fwd_args.values[self.ws_pos: self.ws_pos + 2] = parts
        self.comb_args.values[:2] = parts

    def __call__(self, q: torch.Tensor, indices: torch.Tensor, sm_scale: float, out: torch.Tensor,
                 lse: torch.Tensor | None = None, topk_length=None, attn_sink=None, extra_indices=None,
                 extra_topk_length=None) -> None:
        if self.fwd is None:  # no query tokens
            return
        if self.combine is not None and _workspaces.get(self.device) is not self.ws_buf:
            self._attach_workspace()
        vals = (q, indices, topk_length, attn_sink, out, lse, extra_indices, extra_topk_length, sm_scale)
        args = self.fwd_args.values.copy()
        for pos, which in self.fwd_args.slots:
            args[pos] = vals[which]
        global last_compiled
        last_compiled = self.fwd(*args, **self.fwd_kw)
        if self.combine is not None:
            args = self.comb_args.values.copy()
            for pos, which in self.comb_args.slots:
                args[pos] = vals[which]
            self.combine(*args, **self.comb_kw)


def run_triton(spec: KernelSpec, config: Config, q: torch.Tensor, view: KVCacheView,
               indices: torch.Tensor, sm_scale: float, out: torch.Tensor, lse: torch.Tensor | None,
               *, topk_length=None, attn_sink=None, extra_view: KVCacheView | None = None,
               extra_indices=None, extra_topk_length=None) -> None:
    """Write attention for ``q`` into ``out`` (and ``lse``); inputs are already validated."""
    TritonLaunch(spec, config, q, view, indices, out, lse, topk_length=topk_length, attn_sink=attn_sink,
                 extra_view=extra_view, extra_indices=extra_indices, extra_topk_length=extra_topk_length)(
        q, indices, sm_scale, out, lse, topk_length, attn_sink, extra_indices, extra_topk_length)
