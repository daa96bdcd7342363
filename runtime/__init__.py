"""sparsemla.runtime: the public API (dispatch to generated kernels or the reference)."""
import torch

from .api import sparse_mla
from .quant import dequantize_kv, quantize_kv
from .paging import convert_indices, pack_valid_prefix, page_split
from . import api as _api, flashinfer_backend as _flashinfer_backend, paging as _paging, \
    triton_backend as _triton_backend


def release_retired_buffers() -> int:
    """Free the device buffers (split-K workspaces, page_split's touched-page state) that a larger call
    replaced and that are kept for the CUDA graphs captured with them; returns the bytes released. Call it
    only when no such graph will replay (e.g. after deleting them)."""
    return _triton_backend.release_retired_workspaces() + _paging.release_retired_lists()


def release_buffers() -> int:
    """Drop every device buffer the runtime keeps between calls: the split-K workspaces of every stream
    (current and replaced ones), page_split's touched-page states and the outputs it keeps for calls without
    ``out``, the FlashInfer backend's buffers, and the prepared call signatures that hold them (the next call
    of a signature validates and prepares it again). Returns the bytes of the tensors dropped (memory the
    caller still references, e.g. a page_split output, stays allocated). For a serving engine that frees a model or sleeps:
    call it only when no CUDA graph that captured sparsemla calls will replay."""
    dropped = []
    for table in (_triton_backend._workspaces, _paging._split_buffers, _flashinfer_backend._float_workspaces,
                  _flashinfer_backend._scratch):
        dropped += list(table.values())
        table.clear()
    for states in (_paging._list_buffers.values(), _flashinfer_backend._states.values()):
        dropped += [t for st in states for t in vars(st).values() if isinstance(t, torch.Tensor)]
    _paging._list_buffers.clear()
    _flashinfer_backend._states.clear()
    _api.clear_call_cache()
    return sum(t.numel() * t.element_size() for t in dropped) + release_retired_buffers()


__all__ = ["sparse_mla", "quantize_kv", "dequantize_kv",
           "convert_indices", "pack_valid_prefix", "page_split",
           "release_retired_buffers", "release_buffers"]
