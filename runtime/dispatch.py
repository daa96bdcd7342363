"""Choose the launch config for a spec and a number of query tokens."""
from __future__ import annotations

from functools import lru_cache

import torch

from sparsemla.gen.spec import Config, KernelSpec, default_config


@lru_cache(maxsize=None)
def _num_sms(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).multi_processor_count


def select_config(spec: KernelSpec, num_tokens: int, device: torch.device) -> Config:
    return default_config(spec, num_tokens, _num_sms(device))
