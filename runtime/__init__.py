"""sparsemla.runtime: the public API (dispatch to generated kernels or the reference)."""
from .api import sparse_mla
from .quant import dequantize_kv, quantize_kv

__all__ = ["sparse_mla", "quantize_kv", "dequantize_kv"]
