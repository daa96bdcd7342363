"""Run a public call on the CUDA device of its first tensor argument.

Triton launches on the current CUDA device. A call whose tensors live on another GPU of the process (e.g. a
model spread over GPUs by layer, where nothing sets the device per layer) would launch there with pointers
into another GPU's memory. PyTorch's own operators guard against that; so do these entry points: where the
first tensor argument is on a CUDA device other than the current one, the call runs inside
``torch.cuda.device`` of that tensor's device.
"""
from __future__ import annotations

import functools

import torch


def on_tensor_device(fn):
    """``fn`` run on its first positional argument's CUDA device, where that is not the current device."""
    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        t = args[0] if args else None
        if (isinstance(t, torch.Tensor) and t.is_cuda and not torch.compiler.is_compiling()
                and t.get_device() != torch.cuda.current_device()):
            with torch.cuda.device(t.device):
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    return guarded
