"""``sparsemla info``: the GPU, the arch generated code targets, the backends, tuned-table coverage."""
from __future__ import annotations

import argparse
import os

import torch


def _gpu_lines() -> tuple[list[str], torch.device | None]:
    if not torch.cuda.is_available():
        named = os.environ.get("SPARSEMLA_GPU")
        return ["GPU: no GPU (CUDA not available)" + (f"; tables of SPARSEMLA_GPU={named!r}" if named else "")], None
    dev = torch.device("cuda", torch.cuda.current_device())
    p = torch.cuda.get_device_properties(dev)
    return [f"GPU: {p.name} (compute capability {p.major}.{p.minor}, {p.multi_processor_count} SMs)"], dev


def _tuned_lines(arch: str, device) -> list[str]:
    try:
        from sparsemla.gen import tuned_table as tt
        from sparsemla.runtime import dispatch
    except ImportError:
        return ["tuned table: no tuned table module"]
    try:
        # without a GPU, the tables the runtime reads for $SPARSEMLA_GPU (dispatch._gpu), if set
        gpus = dispatch.table_gpus(device if device is not None else torch.device("cpu"), arch)
        if not gpus:  # no GPU named: the table of the arch's reference part
            gpus = (tt.REFERENCE_GPUS.get(arch),)
            if gpus[0] is None:
                return [f"tuned table: no GPU, and no reference table for {arch}"]
        tables = [(gpu, tt.load_tables(gpu)) for gpu in gpus]
    except Exception as e:  # a broken table module or file must not break `info`
        return [f"tuned table: unreadable ({type(e).__name__}: {e})"]
    lines = []
    for i, (gpu, entries) in enumerate(tables):
        role = "" if i == 0 else f" ({tt.stand_in_role(gpus[0], gpu, arch)}: used where {gpus[0]} has no entry)"
        if not entries:
            lines.append(f"tuned table: none for {gpu}{role}" + ("" if len(tables) > i + 1 else
                                                                  " (untuned default configs, Triton only)"))
            continue
        all_entries = [e for buckets in entries.values() for e in buckets.values()]
        sources = "/".join(sorted({e.source for e in all_entries}))
        on_fi = sum(e.backend == "flashinfer" for e in all_entries)
        lines.append(f"tuned table: {gpu}: {len(entries)} specs, {len(all_entries)} buckets "
                     f"({on_fi} on flashinfer), source {sources}{role}")
    return lines + _paging_lines(gpus)


def _paging_lines(gpus) -> list[str]:
    """The paging tables of ``gpus`` (the device's, then its stand-ins')."""
    try:
        from sparsemla.gen import paging_table
        found = [(gpu, paging_table.load_tables(gpu)) for gpu in gpus]
    except Exception as e:
        return [f"paging table: unreadable ({type(e).__name__}: {e})"]
    for gpu, entries in found:
        if entries:
            n = sum(len(b) for b in entries.values())
            return [f"paging table: {gpu}: {len(entries)} kernel paths, {n} buckets"]
    return ["paging table: none (default paging configs; `sparsemla tune-paging` tunes them)"]


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
    lines.extend(_tuned_lines(arch, dev))
    return lines


def info_main(argv=None) -> int:
    argparse.ArgumentParser(prog="sparsemla info",
                            description="Print the GPU, the arch, the backends and the tuned-table "
                                        "coverage.").parse_args(argv)
    print("\n".join(info_lines()))
    return 0
