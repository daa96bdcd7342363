"""Shared test helpers: random problems with NaN-poisoned caches and an independent fp64 reference."""
from __future__ import annotations

import math

import torch

import sparsemla
from sparsemla.gen.layout import M1_DATA_ROW_BYTES, M1_SCALE_ROW_BYTES

# (kv_format, d_qk, page_size)
FORMAT_CASES = {
    "auto576": ("auto", 576, None),
    "auto_nope512": ("auto", 512, None),
    "fp8_576": ("fp8_e4m3", 576, 16),
    "fp8_nope512": ("fp8_e4m3", 512, None),
    "ds_mla": ("fp8_ds_mla", 576, 16),
    "model1_p64": ("model1", 512, 64),
}


def make_cache(kv_format, d_qk, num_slots, page_size, q_dtype, gen):
    """(cache, kwargs for sparse_mla, float64 dequantized rows [num_slots, d_qk])."""
    kv = torch.randn(num_slots, d_qk, generator=gen)
    kw = {}
    if kv_format == "auto":
        cache = sparsemla.quantize_kv(kv.to(q_dtype), "auto", page_size=page_size)
    elif kv_format == "fp8_e4m3":
        cache, scale = sparsemla.quantize_kv(kv, "fp8_e4m3", page_size=page_size)
        kw["kv_scale"] = scale
    else:
        cache = sparsemla.quantize_kv(kv, kv_format, page_size=page_size)
        if kv_format == "model1":
            kw["page_size"] = page_size
    deq = sparsemla.dequantize_kv(cache, kv_format, page_size=page_size if kv_format == "model1" else None,
                                  kv_scale=kw.get("kv_scale")).double()
    return cache, kw, deq


def poison_unreferenced(cache, kv_format, page_size, referenced: torch.Tensor):
    """Overwrite every slot whose id is not in ``referenced`` with NaN bytes (0xFF is NaN in
    e4m3, bf16, fp16 and fp32), including model1 scale rows and page padding."""
    if kv_format == "model1":
        num = cache.shape[0] * page_size
    else:
        num = cache.reshape(-1, cache.shape[-1]).shape[0]
    keep = torch.zeros(num, dtype=torch.bool)
    keep[referenced[referenced >= 0].long().unique()] = True
    if kv_format in ("auto", "fp8_e4m3", "fp8_ds_mla"):
        rows = cache.reshape(-1, cache.shape[-1])
        if kv_format == "auto":
            rows[~keep[: rows.shape[0]]] = float("nan")
        else:
            rows.view(torch.uint8)[~keep[: rows.shape[0]]] = 0xFF
        return cache
    pages = cache.view(torch.uint8)
    P = page_size
    for s in torch.nonzero(~keep).flatten().tolist():
        p, o = divmod(s, P)
        if p >= pages.shape[0]:
            continue
        pages[p, o * M1_DATA_ROW_BYTES:(o + 1) * M1_DATA_ROW_BYTES] = 0xFF
        base = P * M1_DATA_ROW_BYTES + o * M1_SCALE_ROW_BYTES
        pages[p, base:base + M1_SCALE_ROW_BYTES] = 0xFF
    pages[:, P * (M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES):] = 0xFF
    return cache


def reference64(q, deq, indices, sm_scale, d_v, topk_length=None, sink=None, x_deq=None, x_indices=None,
                x_topk_length=None):
    """An independent float64 loop: (out [T,H,d_v], lse [T,H]) with FlashMLA's conventions."""
    T, H, _ = q.shape
    out = torch.zeros(T, H, d_v, dtype=torch.float64)
    lse = torch.full((T, H), math.inf, dtype=torch.float64)
    for t in range(T):
        rows = []
        for idx, length, table in ((indices, topk_length, deq), (x_indices, x_topk_length, x_deq)):
            if idx is None:
                continue
            n = idx.shape[1] if length is None else max(0, min(int(length[t]), idx.shape[1]))
            sel = [int(s) for s in idx[t, :n] if 0 <= int(s) < table.shape[0]]
            if sel:
                rows.append(table[sel])
        if not rows:
            continue
        kv = torch.cat(rows)
        s = (q[t].double()[:, : kv.shape[1]] @ kv.T) * sm_scale  # [H, n]
        l = torch.logsumexp(s, dim=1)
        denom = l if sink is None else torch.logaddexp(l, sink.double())
        w = torch.exp(s - denom[:, None])
        w = torch.nan_to_num(w, nan=0.0)
        out[t] = w @ kv[:, :d_v]
        lse[t] = l
    return out, lse


def random_indices(T, topk, num_slots, gen, invalid_frac=0.2):
    idx = torch.randint(0, num_slots, (T, topk), generator=gen, dtype=torch.int32)
    drop = torch.rand(T, topk, generator=gen) < invalid_frac
    idx[drop] = -1
    return idx


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def two_caches(kv_format, d_qk, page, x_page, q_dtype, gen, *, topk, xtopk, slots, x_slots, tlen=None, xlen=None,
               invalid_rows=()):
    """A main and an extra cache for T = len(xlen) tokens, NaN in every slot the lists (cut to tlen / xlen) do
    not reference, and the rows ``invalid_rows`` of the main list all -1: (cache, xcache, idx, xidx, deq, xdeq,
    kw), kw holding each cache's page size and fp8 scale as sparse_mla takes them."""
    T = len(xlen)
    cache, kw, deq = make_cache(kv_format, d_qk, slots, page, q_dtype, gen)
    xcache, xkw, xdeq = make_cache(kv_format, d_qk, x_slots, x_page, q_dtype, gen)
    idx, xidx = random_indices(T, topk, slots, gen), random_indices(T, xtopk, x_slots, gen)
    for t in invalid_rows:
        idx[t] = -1
    main_ref = idx.flatten() if tlen is None else torch.cat([idx[t, :int(tlen[t])] for t in range(T)])
    cache = poison_unreferenced(cache, kv_format, page or 1, main_ref)
    xcache = poison_unreferenced(xcache, kv_format, x_page or 1, torch.cat([xidx[t, :int(xlen[t])] for t in range(T)]))
    if kv_format == "model1":
        kw["extra_page_size"] = x_page
    if "kv_scale" in xkw:  # each fp8 cache has its own per-tensor scale
        kw["extra_kv_scale"] = xkw["kv_scale"]
    return cache, xcache, idx, xidx, deq, xdeq, kw


def pack_parts_bf16(parts: torch.Tensor) -> torch.Tensor:
    """Float32 split-K partials ``parts`` [rows, 512] in the format of the Gluon kernels' parts_bf16
    (sparse_mla_gluon.py.jinja's _write_parts_bf16 and _write_rows_bf16), which the combine reads with PARTS_BF16:
    rounded to bfloat16, column 16g + i + 8j of a row at position 16g + 2i + j. Returns them as the float32 workspace
    slice the kernels take (half the floats)."""
    rows = parts.shape[0]
    p = torch.arange(512)
    packed = parts.bfloat16()[:, 16 * (p // 16) + (p % 16) // 2 + 8 * (p % 2)].contiguous()
    return packed.view(torch.float32).reshape(rows * 256)
