"""sparsemla.gen: specs, template rendering and (later) tuning of the generated kernels."""
from .render import load_module, render_source
from .spec import ARCHS, Config, KernelSpec, default_config

__all__ = ["ARCHS", "Config", "KernelSpec", "default_config", "load_module", "render_source"]
