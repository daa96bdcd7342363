"""Build and read KV caches in every format: ``quantize_kv`` and ``dequantize_kv``.

``quantize_kv`` writes the byte layouts by hand (not through gen.layout), so that the tests'
round trip checks the layout description the kernel and reference read.
"""
from __future__ import annotations

import torch

from sparsemla.gen.layout import FORMATS, model1_page_bytes

from .kvcache import describe_cache, format_scale, gather_rows

E4M3_MAX = 448.0


def _pow2_scale(amax: torch.Tensor) -> torch.Tensor:
    """The smallest power of two s with amax / s <= 448 (FlashMLA's quantizer rounds up)."""
    ratio = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    return torch.exp2(torch.ceil(torch.log2(ratio)).clamp(-126, 127))


def _group_quantize(nope: torch.Tensor, group: int):
    """e4m3 bytes [n, width] of ``nope`` [n, width] float and its power-of-two scale per group."""
    n, width = nope.shape
    grouped = nope.reshape(n, width // group, group)
    scale = _pow2_scale(grouped.abs().amax(dim=2))  # [n, width // group]
    vals = (grouped / scale[:, :, None]).to(torch.float8_e4m3fn).view(torch.uint8).reshape(n, width)
    return vals, scale


def _bf16_bytes(x: torch.Tensor) -> torch.Tensor:
    """[n, d] float -> [n, 2 * d] uint8: the bytes of its bf16 values."""
    return x.to(torch.bfloat16).contiguous().view(torch.uint8).reshape(x.shape[0], 2 * x.shape[1])


def _pages(rows: torch.Tensor, page_size: int) -> torch.Tensor:
    n = rows.shape[0]
    pad = (-n) % page_size
    if pad:
        rows = torch.cat([rows, rows.new_zeros(pad, *rows.shape[1:])])
    return rows.reshape(-1, page_size, *rows.shape[1:])


def _check_input(kv, d_expected=None, kv_format=""):
    if not isinstance(kv, torch.Tensor) or kv.ndim != 2 or not kv.is_floating_point():
        raise ValueError(f"kv: expected a float tensor [N, d], got "
                         f"{getattr(kv, 'shape', type(kv).__name__)} {getattr(kv, 'dtype', '')}")
    if d_expected is not None and kv.shape[1] != d_expected:
        raise ValueError(f"kv: kv_format={kv_format!r} expects [N, {d_expected}], got {tuple(kv.shape)}")


def quantize_kv(kv: torch.Tensor, kv_format: str, *, page_size: int | None = None,
                kv_scale: float | None = None):
    """Build a cache in ``kv_format`` from float rows ``kv [N, d]``; slot i holds row i.

    auto: ``kv`` itself ([N, d], or [pages, page_size, d] with page_size=; padded with zeros).
    fp8_e4m3: returns ``(cache, kv_scale)``; the scale is amax / 448 unless given.
    fp8_ds_mla: uint8 [pages, page_size, 656] ([N, 656] without page_size); scales per 128.
    model1: uint8 [pages, page_bytes] (page_size defaults to 64); ue8m0 scales per 64.
    """
    if kv_format not in FORMATS:
        raise ValueError(f"kv_format={kv_format!r}: expected one of {FORMATS}")
    kv_scale = format_scale(kv_format, kv_scale)
    if kv_format == "auto":
        _check_input(kv)
        return kv.clone() if page_size is None else _pages(kv, page_size)
    if kv_format == "fp8_e4m3":
        _check_input(kv)
        x = kv.float()
        if kv_scale is None:
            amax = x.abs().max().item()
            kv_scale = amax / E4M3_MAX if amax > 0 else 1.0
        q = (x / kv_scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
        return (q if page_size is None else _pages(q.view(torch.uint8), page_size).view(torch.float8_e4m3fn)), float(kv_scale)
    if kv_format == "fp8_ds_mla":
        _check_input(kv, 576, kv_format)
        n = kv.shape[0]
        x = kv.float()
        vals, scale = _group_quantize(x[:, :512], 128)  # scale [n, 4]
        rows = torch.empty(n, 656, dtype=torch.uint8, device=kv.device)
        rows[:, :512] = vals
        rows[:, 512:528] = scale.to(torch.float32).contiguous().view(torch.uint8).reshape(n, 16)
        rows[:, 528:656] = _bf16_bytes(x[:, 512:])
        return rows if page_size is None else _pages(rows, page_size)
    # model1
    _check_input(kv, 512, kv_format)
    page_size = 64 if page_size is None else page_size
    n = kv.shape[0]
    x = kv.float()
    vals, scale = _group_quantize(x[:, :448], 64)  # scale [n, 7]
    data = torch.empty(n, 576, dtype=torch.uint8, device=kv.device)
    data[:, :448] = vals
    data[:, 448:] = _bf16_bytes(x[:, 448:])
    scale_rows = torch.zeros(n, 8, dtype=torch.uint8, device=kv.device)
    scale_rows[:, :7] = (torch.log2(scale).round() + 127).to(torch.uint8)
    data_p, scale_p = _pages(data, page_size), _pages(scale_rows, page_size)
    pages = torch.zeros(data_p.shape[0], model1_page_bytes(page_size), dtype=torch.uint8, device=kv.device)
    pages[:, :page_size * 576] = data_p.reshape(-1, page_size * 576)
    pages[:, page_size * 576:page_size * 584] = scale_p.reshape(-1, page_size * 8)
    return pages


def dequantize_kv(cache: torch.Tensor, kv_format: str, *, page_size: int | None = None,
                  kv_scale: float | None = None) -> torch.Tensor:
    """float32 [num_slots, d_qk]: every slot of ``cache`` dequantized (slot = page * page_size + offset)."""
    if kv_format in ("auto", "fp8_e4m3"):
        d_qk = cache.shape[-1]
        d_v = 1 << (d_qk.bit_length() - 1)
    elif kv_format == "fp8_ds_mla":
        d_qk, d_v = 576, 512
    else:
        d_qk, d_v = 512, 512
    view = describe_cache(cache, kv_format, d_qk, d_v, name="cache", page_size=page_size,
                          kv_scale=kv_scale)
    return gather_rows(view, torch.arange(view.num_slots, device=cache.device))
