"""A KV cache tensor checked against its format and described the way the kernel reads it.

``KVCacheView`` is shared by the Triton launcher and the PyTorch reference: slot ``s`` lives
at ``(s // page_size) * stride_page + (s % page_size) * stride_row`` (elements for plain
formats, bytes for packed ones), and ``views`` holds the typed tensors the segments read.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from sparsemla.gen.layout import (DS_MLA_ROW_BYTES, M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES,
                                  FormatLayout, format_layout, model1_page_bytes)

FLOAT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_VIEW_DTYPES = {"fp8": torch.uint8, "bf16": torch.bfloat16, "f32": torch.float32}


@dataclass
class KVCacheView:
    layout: FormatLayout
    page_size: int
    num_slots: int
    stride_page: int
    stride_row: int
    views: dict  # view name -> tensor whose data_ptr is the cache's first byte
    kv_scale: float

    @property
    def kv_format(self) -> str:
        return self.layout.name

    def flat(self, view: str) -> torch.Tensor:
        """A 1-D tensor over every element of ``view`` the cache spans (for the reference)."""
        t = self.views[view]
        extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()) if s > 0)
        return torch.as_strided(t, (extent,), (1,), t.storage_offset())


def _expected(kv_format: str, d_qk: int, page_size) -> str:
    if kv_format == "auto":
        return (f"a bf16/fp16/fp32 tensor of q's dtype shaped [num_slots, {d_qk}] or "
                f"[num_pages, page_size, {d_qk}] (last dim contiguous)")
    if kv_format == "fp8_e4m3":
        return (f"a float8_e4m3fn (or uint8) tensor shaped [num_slots, {d_qk}] or "
                f"[num_pages, page_size, {d_qk}] (last dim contiguous)")
    if kv_format == "fp8_ds_mla":
        return (f"a uint8 (or float8_e4m3fn) tensor shaped [num_pages, page_size, {DS_MLA_ROW_BYTES}] "
                f"or [num_slots, {DS_MLA_ROW_BYTES}]: per token 512 e4m3, 4 fp32 scales, 64 bf16 rope")
    pb = model1_page_bytes(page_size) if page_size else "ceil(page_size*584/576)*576"
    return (f"a uint8 (or float8_e4m3fn) tensor of pages, shaped [num_pages, {pb}] (with page_size=) "
            f"or [num_pages, page_size, (1,) {M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES}] with page stride "
            f"{pb} bytes: page_size rows of 448 e4m3 + 64 bf16, then page_size rows of 7 ue8m0 + 1 pad")


def format_scale(kv_format: str, value, name: str = "kv_scale") -> float | None:
    """A cache's per-tensor scale ``value`` (None, a real number or a one-element tensor) as None or a positive
    finite float; only fp8_e4m3 has one. Errors name ``name``."""
    if value is None:
        return None
    if kv_format != "fp8_e4m3":
        raise ValueError(f"{name}={value!r}: only kv_format='fp8_e4m3' has a per-tensor scale")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name}: a tensor of shape {tuple(value.shape)}, expected a single value")
        scale = float(value)
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        scale = float(value)
    else:
        raise TypeError(f"{name}={value!r}: expected a positive finite float")
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"{name}={value!r}: expected a positive finite float")
    return scale


def describe_cache(cache, kv_format: str, d_qk: int, d_v: int, *, name: str = "kv_cache",
                   page_size: int | None = None, kv_scale: float | None = None,
                   scale_name: str = "kv_scale", q_dtype: torch.dtype | None = None) -> KVCacheView:
    """Validate ``cache`` for ``kv_format`` and return how to read it; errors name ``name`` (the cache) and
    ``scale_name`` (its per-tensor scale)."""
    layout = format_layout(kv_format, d_qk, d_v)
    if not isinstance(cache, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(cache).__name__}")

    def bad(what):
        raise ValueError(f"{name} (shape {tuple(cache.shape)}, dtype {cache.dtype}, strides "
                         f"{tuple(cache.stride())}) {what}; kv_format={kv_format!r} expects "
                         f"{_expected(kv_format, d_qk, page_size)}")

    if page_size is not None and (not isinstance(page_size, int) or page_size < 1):
        raise ValueError(f"page_size={page_size!r}: expected a positive int")
    kv_scale = format_scale(kv_format, kv_scale, scale_name)
    if cache.ndim == 4:
        if cache.shape[2] != 1:
            bad("has a 4-D shape whose dim 2 (kv heads) is not 1")
        cache = cache[:, :, 0]

    if kv_format in ("auto", "fp8_e4m3"):
        if kv_format == "auto":
            if cache.dtype not in FLOAT_DTYPES:
                bad("has the wrong dtype")
            if q_dtype is not None and cache.dtype != q_dtype:
                bad(f"has dtype {cache.dtype} but q is {q_dtype}")
            base = cache
        else:
            if cache.dtype not in (torch.float8_e4m3fn, torch.uint8):
                bad("has the wrong dtype")
            base = cache.view(torch.uint8)
        if cache.ndim not in (2, 3) or cache.shape[-1] != d_qk or cache.stride(-1) != 1:
            bad(f"does not end in a contiguous dim of {d_qk}")
        views = {"elem" if kv_format == "auto" else "fp8": base}
        scale = 1.0 if kv_scale is None else kv_scale
    elif kv_format == "fp8_ds_mla":
        if cache.dtype not in (torch.uint8, torch.float8_e4m3fn):
            bad("has the wrong dtype")
        if cache.ndim not in (2, 3) or cache.shape[-1] != DS_MLA_ROW_BYTES or cache.stride(-1) != 1:
            bad(f"does not end in a contiguous dim of {DS_MLA_ROW_BYTES} bytes")
        base = cache.view(torch.uint8)
        if any(s % 4 for s in base.stride()[:-1]) or base.storage_offset() % 4 or base.data_ptr() % 16:
            bad("has strides or an offset that are not multiples of 4 bytes")
        views = {v: base.view(_VIEW_DTYPES[v]) for v in layout.views}
        scale = 1.0
    else:  # model1
        if cache.dtype not in (torch.uint8, torch.float8_e4m3fn):
            bad("has the wrong dtype")
        base = cache.view(torch.uint8)
        if base.ndim == 3:
            if page_size is not None and page_size != base.shape[1]:
                bad(f"has {base.shape[1]} tokens per page but page_size={page_size}")
            page_size = base.shape[1]
        elif base.ndim == 2:
            if page_size is None:
                bad("is 2-D [num_pages, page_bytes] but page_size= was not given")
            if base.shape[1] != model1_page_bytes(page_size):
                bad(f"has {base.shape[1]} bytes per page")
        else:
            bad("is neither 2-D nor 3-D")
        if base.stride(0) != model1_page_bytes(page_size) or base.stride(-1) != 1:
            bad(f"has a page stride of {base.stride(0)} bytes, not {model1_page_bytes(page_size)}")
        if base.data_ptr() % 16:
            bad("does not start on a 16-byte boundary")
        flat = torch.as_strided(base, (base.shape[0], base.stride(0)), (base.stride(0), 1))
        views = {v: flat.view(_VIEW_DTYPES[v]) for v in layout.views}
        return KVCacheView(layout, page_size, base.shape[0] * page_size, base.stride(0),
                           M1_DATA_ROW_BYTES, views, 1.0)

    if cache.ndim == 2:  # a flat slot table: slot ids are row numbers whatever the paging
        return KVCacheView(layout, 1, cache.shape[0], base.stride(0), 0, views, scale)
    if page_size is not None and page_size != cache.shape[1]:
        bad(f"has {cache.shape[1]} tokens per page but page_size={page_size}")
    return KVCacheView(layout, cache.shape[1], cache.shape[0] * cache.shape[1], base.stride(0),
                       base.stride(1), views, scale)


def valid_mask(indices: torch.Tensor, topk_length, num_slots: int) -> torch.Tensor:
    """bool [T, topk]: the entries a kernel reads (slot in range, position before ``topk_length``).

    One definition for the reference and the FlashInfer mapping: a length below 0 or past the
    list reads as the list's end, as the Triton kernel's clamp does.
    """
    valid = (indices >= 0) & (indices < num_slots)
    if topk_length is not None:
        pos = torch.arange(indices.shape[1], device=indices.device)
        valid &= pos[None, :] < topk_length[:, None].to(indices.device)
    return valid


def gather_rows(view: KVCacheView, slots: torch.Tensor) -> torch.Tensor:
    """float32 [*slots.shape, d_qk]: the dequantized rows of ``slots`` (invalid slots: zeros).

    Reads the cache exactly as the kernel does, segment by segment, in PyTorch.
    """
    layout = view.layout
    flat_slots = slots.reshape(-1).to(torch.int64)
    valid = (flat_slots >= 0) & (flat_slots < view.num_slots)
    s = torch.where(valid, flat_slots, torch.zeros_like(flat_slots))
    page = s // view.page_size
    off = s % view.page_size
    row = page * view.stride_page + off * view.stride_row
    srow = page * view.stride_page + view.page_size * layout.row_bytes + off * M1_SCALE_ROW_BYTES
    out = torch.zeros(flat_slots.numel(), layout.d_qk, dtype=torch.float32, device=slots.device)
    for seg in layout.segments:
        cols = torch.arange(seg.width, device=slots.device)
        if seg.view == "bf16":
            vals = view.flat("bf16")[((row + seg.offset) // 2)[:, None] + cols].float()
        elif seg.view == "elem":
            vals = view.flat("elem")[row[:, None] + seg.offset + cols].float()
        else:
            vals = view.flat("fp8")[row[:, None] + seg.offset + cols].view(torch.float8_e4m3fn).float()
            if seg.scale == "f32":
                vals = vals * view.flat("f32")[(row + seg.scale_offset) // 4][:, None]
            elif seg.scale == "ue8m0":
                b = view.flat("fp8")[srow + seg.scale_offset].to(torch.int32)
                vals = vals * (b << 23).view(torch.float32)[:, None]
        out[:, seg.col:seg.col + seg.width] = vals
    if layout.tensor_scale:
        out *= view.kv_scale
    out[~valid] = 0.0
    return out.reshape(*slots.shape, layout.d_qk)
