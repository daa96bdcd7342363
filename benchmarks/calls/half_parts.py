"""Issue 7 diagnostic (session 34): what halving the split-K partials' L2 sectors would buy, before building it.
Session 34's call 2 stored the partials as float16 in the accumulators' layout: half the bytes but the same sector
count (each store wrote 16 of a sector's 32 bytes), and it gained nothing (0.75-1.00x). A layout whose 16-bit stores
fill whole sectors would halve the sectors. This times the shipped kernels against copies whose narrow Gluon kernel
writes only the partials' first 256 columns (the other stores masked off: half the sectors, in whole ones), and
against copies whose combine also reads only those: outputs are wrong, so nothing is checked; timing only, in
rotating orders (CUDA-graph replay over rotating inputs, median us). Run on the GPU after `pip install .`:
  python3 benchmarks/calls/half_parts.py [--rows bf16:1:128,...] [--reps 6]
"""
import argparse
import tempfile
from pathlib import Path

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.render import _import as import_module_file, render_source
from sparsemla.runtime.api import clear_call_cache
from variant_rows import rotating, time_rows  # (the script's folder)

ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:16,bf16:4:32,bf16:16:16,fp8:1:128,fp8_ds_mla:1:128,model1:16:16"
HALF = 256
# The narrow kernel's split-K store, its columns (O^T's rows) past HALF masked off.
WRITE_EDIT = ("acc * _by_head(inv, TRANSPOSED), mask=_by_head(hm, TRANSPOSED))",
              f"acc * _by_head(inv, TRANSPOSED), mask=_by_head(hm, TRANSPOSED) & (_by_head(cols, not TRANSPOSED) < "
              f"{HALF}))")
# The combine's loads of the partials, columns past HALF not read (0).
READ_EDIT = ("mask=smask[:, None], other=0.0", f"mask=smask[:, None] & (dv[None, :] < {HALF}), other=0.0")
SHIPPED_LOAD = tb.load_module
_edited = {}


def _edited_module(spec, edit):
    """spec's module with every occurrence of edit[0] replaced by edit[1], imported from a file of its own."""
    key = (spec.key, edit)
    if key not in _edited:
        src = render_source(spec)
        if edit[0] not in src:
            raise RuntimeError(f"{spec.key}: {edit[0]!r} not in its module")
        path = Path(tempfile.mkdtemp(prefix="half_parts")) / f"{spec.module_name}.py"
        path.write_text(src.replace(edit[0], edit[1]))
        _edited[key] = import_module_file(spec, path, f"_half{len(_edited)}")
    return _edited[key]


def use(half_writes: bool, half_reads: bool):
    def load(spec):
        if isinstance(spec, GluonKernel):
            return _edited_module(spec, WRITE_EDIT) if half_writes and spec.narrow else SHIPPED_LOAD(spec)
        return _edited_module(spec, READ_EDIT) if half_reads else SHIPPED_LOAD(spec)
    tb.load_module = load
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args()
    variants = {"shipped": lambda: use(False, False), "half writes": lambda: use(True, False),
                "half writes+reads": lambda: use(True, True)}
    lines = time_rows(args.rows, variants, rotating(3, args.reps), torch.device("cuda"), checked=False)
    use(False, False)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
