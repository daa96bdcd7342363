"""Triton's interpreter (TRITON_INTERPRET=1: the CPU tests and ``sparsemla demo`` without a GPU) with NumPy 2.3+.

The interpreter holds a scalar as a 1-element array, and Triton 3.6's turns one into a loop bound (``range(lo, hi,
BLOCK_N)`` in a kernel) with ``int(array)``, which NumPy 2.3 and later refuse ("only 0-dimensional arrays can be
converted to Python scalars"): with torch 2.11 (Triton 3.6) and the NumPy pip installs with it, every generated
kernel failed in the interpreter. Triton 3.9 squeezes the array first; ``patch`` gives an interpreter without that
the same conversion, for the interpreted calls only (Triton's own patch scope restores it after each).
"""
from __future__ import annotations

import functools
import inspect


def _numpy_refuses() -> bool:
    import numpy as np
    try:
        int(np.zeros(1))
        return False
    except TypeError:
        return True


@functools.lru_cache(maxsize=None)
def patch() -> bool:
    """Make the interpreter's scalar-to-index conversion squeeze its array, where NumPy needs it and Triton's
    interpreter has the patch hook this knows (``_patch_lang_tensor(tensor, scope)``); whether it did."""
    if not _numpy_refuses():
        return False
    from triton.runtime import interpreter
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or list(inspect.signature(original).parameters) != ["tensor", "scope"]:
        return False

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = patch_lang_tensor
    return True
