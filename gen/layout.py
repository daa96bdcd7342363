"""Byte layouts of the KV-cache formats: the one place that knows where each value lives.

The kernel template, the PyTorch reference and the quantize/dequantize helpers all read
these descriptions, so a format is defined once.

A dequantized KV row has ``d_qk`` columns. It is read as a list of segments (power-of-two
widths, so each is one Triton tile); a segment says where its values live inside the token's
row, in which element type, with which scale, and whether it also is part of V (the first
``d_v`` columns of the row are V in every format).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

FORMATS = ("auto", "fp8_e4m3", "fp8_ds_mla", "model1")

# fp8_ds_mla (DeepSeek-V3.2): per token 512 e4m3 | 4 fp32 scales | 64 bf16 rope = 656 B.
DS_MLA_NOPE = 512
DS_MLA_GROUP = 128
DS_MLA_ROPE = 64
DS_MLA_SCALE_OFF = DS_MLA_NOPE
DS_MLA_ROPE_OFF = DS_MLA_NOPE + 4 * (DS_MLA_NOPE // DS_MLA_GROUP)
DS_MLA_ROW_BYTES = DS_MLA_ROPE_OFF + 2 * DS_MLA_ROPE  # 656

# model1 (DeepSeek-V4): a page holds page_size data rows of 448 e4m3 + 64 bf16 rope (576 B),
# then page_size scale rows of 7 ue8m0 bytes + 1 pad (8 B); the page is padded to 576 B.
M1_NOPE = 448
M1_GROUP = 64
M1_ROPE = 64
M1_DATA_ROW_BYTES = M1_NOPE + 2 * M1_ROPE  # 576
M1_SCALE_ROW_BYTES = M1_NOPE // M1_GROUP + 1  # 8
M1_PAGE_ALIGN = 576


def model1_page_bytes(page_size: int) -> int:
    raw = page_size * (M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES)
    return -(-raw // M1_PAGE_ALIGN) * M1_PAGE_ALIGN


@dataclass(frozen=True)
class Segment:
    """``width`` columns of the dequantized row starting at column ``col``.

    view: which typed view of the cache holds the values ("elem": the cache's own dtype,
      "fp8": e4m3 bytes, "bf16": bf16 pairs of bytes).
    offset: where the values start inside the token's row, in units of the format's
      addressing (elements for plain formats, bytes for packed ones).
    scale: None, "f32" (a float32 at byte ``scale_offset`` of the row) or "ue8m0"
      (a byte at ``scale_offset`` of the token's scale row: 2 ** (byte - 127)).
    """

    col: int
    width: int
    view: str
    offset: int
    in_v: bool
    scale: str | None = None
    scale_offset: int = 0


@dataclass(frozen=True)
class FormatLayout:
    name: str
    d_qk: int
    d_v: int
    segments: tuple[Segment, ...]
    packed: bool  # uint8 cache whose offsets are bytes (else: element offsets)
    footer: bool  # scale rows stored after the page's data rows (model1)
    tensor_scale: bool  # one float kv_scale for the whole cache
    row_bytes: int  # bytes a token's data row occupies (0: depends on dtype)

    @property
    def views(self) -> tuple[str, ...]:
        out = []
        for seg in self.segments:
            if seg.view not in out:
                out.append(seg.view)
        if any(s.scale == "f32" for s in self.segments) and "f32" not in out:
            out.append("f32")
        if any(s.scale == "ue8m0" for s in self.segments) and "fp8" not in out:
            out.append("fp8")
        return tuple(out)


def _is_pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


@lru_cache(maxsize=None)  # called on every sparse_mla call: keep it off the hot path
def format_layout(kv_format: str, d_qk: int, d_v: int) -> FormatLayout:
    """The layout of ``kv_format`` for these head dims; ValueError names what does not fit."""
    if kv_format not in FORMATS:
        raise ValueError(f"kv_format={kv_format!r}: expected one of {FORMATS}")
    if kv_format in ("auto", "fp8_e4m3"):
        d_rope = d_qk - d_v
        if not _is_pow2(d_v) or d_v < 16:
            raise ValueError(f"d_v={d_v}: expected a power of two >= 16 for kv_format={kv_format!r}")
        if d_rope not in (0, 16, 32, 64, 128):
            raise ValueError(
                f"d_qk={d_qk}, d_v={d_v}: the rope part d_qk - d_v must be 0 or a power of two "
                f"in 16..128 for kv_format={kv_format!r} (DeepSeek MLA: 576 = 512 + 64, NoPE: 512)")
        view = "elem" if kv_format == "auto" else "fp8"
        seg_w = 128 if view == "fp8" and d_v > 128 else d_v  # fp8: dequantize 128 columns at a time
        segs = [Segment(c, seg_w, view, c, True) for c in range(0, d_v, seg_w)]
        if d_rope:
            segs.append(Segment(d_v, d_rope, view, d_v, False))
        return FormatLayout(kv_format, d_qk, d_v, tuple(segs), packed=False, footer=False,
                            tensor_scale=kv_format == "fp8_e4m3", row_bytes=0)
    if kv_format == "fp8_ds_mla":
        if (d_qk, d_v) != (DS_MLA_NOPE + DS_MLA_ROPE, DS_MLA_NOPE):
            raise ValueError(f"d_qk={d_qk}, d_v={d_v}: kv_format='fp8_ds_mla' is d_qk=576, d_v=512")
        segs = [Segment(g * DS_MLA_GROUP, DS_MLA_GROUP, "fp8", g * DS_MLA_GROUP, True,
                        "f32", DS_MLA_SCALE_OFF + 4 * g) for g in range(DS_MLA_NOPE // DS_MLA_GROUP)]
        segs.append(Segment(DS_MLA_NOPE, DS_MLA_ROPE, "bf16", DS_MLA_ROPE_OFF, False))
        return FormatLayout(kv_format, d_qk, d_v, tuple(segs), packed=True, footer=False,
                            tensor_scale=False, row_bytes=DS_MLA_ROW_BYTES)
    # model1
    if (d_qk, d_v) != (M1_NOPE + M1_ROPE, M1_NOPE + M1_ROPE):
        raise ValueError(f"d_qk={d_qk}, d_v={d_v}: kv_format='model1' is d_qk=512, d_v=512 "
                         f"(448 e4m3 NoPE + 64 bf16 rope)")
    segs = [Segment(g * M1_GROUP, M1_GROUP, "fp8", g * M1_GROUP, True, "ue8m0", g)
            for g in range(M1_NOPE // M1_GROUP)]
    segs.append(Segment(M1_NOPE, M1_ROPE, "bf16", M1_NOPE, True))
    return FormatLayout(kv_format, d_qk, d_v, tuple(segs), packed=True, footer=True,
                        tensor_scale=False, row_bytes=M1_DATA_ROW_BYTES)


def kv_bytes_per_token(kv_format: str, d_qk: int, elem_bytes: int = 2) -> float:
    """Bytes of KV a kernel must read per selected token (for rooflines)."""
    if kv_format == "auto":
        return d_qk * elem_bytes
    if kv_format == "fp8_e4m3":
        return d_qk
    if kv_format == "fp8_ds_mla":
        return DS_MLA_ROW_BYTES
    return M1_DATA_ROW_BYTES + M1_SCALE_ROW_BYTES
