"""``sparsemla info``: the GPU, the arch generated code targets, the backends, tuned-table coverage."""
from __future__ import annotations

import argparse

import torch


def _gpu_lines() -> tuple[list[str], torch.device | None]:
    if not torch.cuda.is_available():
        return ["GPU: no GPU (CUDA not available)"], None
    dev = torch.device("cuda", torch.cuda.current_device())
    p = torch.cuda.get_device_properties(dev)
    return [f"GPU: {p.name} (compute capability {p.major}.{p.minor}, {p.multi_processor_count} SMs)"], dev


def _tuned_line(arch: str, device) -> str:
    try:
        from sparsemla.gen import tuned_table
    except ImportError:
        return "tuned table: no tuned table module"
    coverage = getattr(tuned_table, "coverage", None)
    if coverage is None:
        return "tuned table: sparsemla.gen.tuned_table has no coverage()"
    try:
        cov = coverage(arch, device)
    except Exception as e:  # a broken table must not break `info`
        return f"tuned table: unreadable ({type(e).__name__}: {e})"
    if not cov or not cov.get("specs"):
        return f"tuned table: nothing for {arch} (defaults: untuned configs, Triton only)"
    return (f"tuned table: {cov['specs']} specs, {cov.get('buckets', '?')} buckets for {arch} "
            f"(source: {cov.get('source', '?')})")


def info_lines() -> list[str]:
    import triton

    import sparsemla
    from sparsemla.runtime import flashinfer_backend
    from sparsemla.runtime.api import device_arch

    lines, dev = _gpu_lines()
    arch = device_arch(dev if dev is not None else torch.device("cpu"))
    lines.append(f"arch: {arch}" + ("" if dev is not None else " (from SPARSEMLA_ARCH, default sm90)"))
    lines.append(f"sparsemla {sparsemla.__version__}, torch {torch.__version__}")
    lines.append("backends:")
    lines.append(f"  triton {triton.__version__}")
    lines.append(f"  flashinfer {flashinfer_backend.version() or 'not installed'}")
    lines.append("  torch reference (fp32, any device)")
    lines.append(_tuned_line(arch, dev))
    return lines


def info_main(argv=None) -> int:
    argparse.ArgumentParser(prog="sparsemla info",
                            description="Print the GPU, the arch, the backends and the tuned-table "
                                        "coverage.").parse_args(argv)
    print("\n".join(info_lines()))
    return 0
