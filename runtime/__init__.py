"""sparsemla.runtime: the public API (dispatch to generated kernels or the reference)."""
from .api import sparse_mla
from .quant import dequantize_kv, quantize_kv
from .paging import convert_indices, pack_valid_prefix, page_split
from . import paging as _paging, triton_backend as _triton_backend


def release_retired_buffers() -> int:
    """Free the device buffers (split-K workspaces, page_split's touched-page state) that a larger call
    replaced and that are kept for the CUDA graphs captured with them; returns the bytes released. Call it
    only when no such graph will replay (e.g. after deleting them)."""
    return _triton_backend.release_retired_workspaces() + _paging.release_retired_lists()


__all__ = ["sparse_mla", "quantize_kv", "dequantize_kv",
           "convert_indices", "pack_valid_prefix", "page_split",
           "release_retired_buffers"]
