"""sparsemla: a code-generating autotuner for sparse MLA attention kernels."""
__version__ = "0.1.0"

from sparsemla.runtime import dequantize_kv, quantize_kv, sparse_mla  # noqa: E402
from sparsemla.runtime import convert_indices, pack_valid_prefix, page_split  # noqa: E402

__all__ = ["__version__", "sparse_mla", "quantize_kv", "dequantize_kv",
           "convert_indices", "pack_valid_prefix", "page_split"]
