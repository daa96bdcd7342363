"""sparsemla.runtime: the public API (dispatch to generated kernels or the reference)."""
from .api import sparse_mla
from .quant import dequantize_kv, quantize_kv
from .paging import convert_indices, pack_valid_prefix, page_split
from .triton_backend import release_retired_workspaces

__all__ = ["sparse_mla", "quantize_kv", "dequantize_kv",
           "convert_indices", "pack_valid_prefix", "page_split",
           "release_retired_workspaces"]
