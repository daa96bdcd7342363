"""Issue 7 diagnostic (session 35): is it the partials' store instructions or their bytes that cost the narrow Gluon
kernel ~1 us at T=1? Session 34's half_parts.py masked half the split-K partial stores (half the instructions and
half the bytes: bf16 T=1 H=128 9.29 -> 8.33 us, writes alone), and float16 partials (40 stores a thread instead of
68, half the bytes) gained nothing. This times the shipped kernels against copies whose narrow kernel writes the
same float32 partials with the heads as the fastest dimension ([token, head block, split][column][head]): a thread's
two adjacent heads become one 8-byte store (32 STG.E.64 and 4 STG.E a thread instead of 68 STG.E, Triton 3.6; every
sector still whole), and against half_parts.py's half writes. The combine kernel is unchanged, so it reads the old
layout: outputs are wrong, nothing is checked; timing only, in rotating orders (CUDA-graph replay over rotating
inputs, median us). Run on the GPU after `pip install .`:
  python3 benchmarks/calls/head_fast.py [--rows bf16:1:128,...] [--reps 6]
"""
import argparse

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gluon import GluonKernel
from sparsemla.runtime.api import clear_call_cache
from half_parts import SHIPPED_LOAD, WRITE_EDIT, _edited_module  # (the script's folder)
from variant_rows import rotating, time_rows

ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:16,bf16:4:32,bf16:16:16,fp8:1:128,fp8_ds_mla:1:128,model1:16:16"
# The narrow kernel's split-K store with the heads fastest, unmasked (rows timed have whole head blocks; every address
# stays inside the workspace: [T * H / BLOCK_H * splits][512][BLOCK_H] floats).
HEAD_FAST_EDIT = (
    "gl.store(o_part + _by_head(part, TRANSPOSED) * D_NOPE + _by_head(cols, not TRANSPOSED),\n"
    "                 acc * _by_head(inv, TRANSPOSED), mask=_by_head(hm, TRANSPOSED))",
    "gl.store(o_part + ((((t * num_heads + heads0) // BLOCK_H) * num_splits + split) * D_NOPE\n"
    "                           + _by_head(cols, not TRANSPOSED)) * BLOCK_H + _by_head(heads - heads0, TRANSPOSED),\n"
    "                 acc * _by_head(inv, TRANSPOSED))")


def use(edit):
    def load(spec):
        if edit is not None and isinstance(spec, GluonKernel) and spec.narrow:
            return _edited_module(spec, edit)
        return SHIPPED_LOAD(spec)
    tb.load_module = load
    clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args()
    variants = {"shipped": lambda: use(None), "heads fastest": lambda: use(HEAD_FAST_EDIT),
                "half writes": lambda: use(WRITE_EDIT)}
    lines = time_rows(args.rows, variants, rotating(3, args.reps), torch.device("cuda"), checked=False)
    use(None)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
