"""Issue 7 experiment (session 24, call 8): the wide Gluon kernel's group A writing its 384 output columns through
a stage (GluonKernel.staged_out; runtime/triton_backend._STAGED_OUT, off): 24 16-byte stores a thread instead of
96 4-byte ones. Session 18's profile of bf16 T=128 H=128 (benchmarks/results/session18/call3/gluon_timeline.log)
had A's output take ~9.4K cycles of a ~111K-cycle program, and session 24's call 5 found ~13 us per round of
wide programs that do not scale with the tiles.

1. Correctness of the staged kernel against the float64 reference (tests/helpers.py): 128 heads and 32 (a
   64-head block half masked), sinks with +/-inf, LSE, topk_length with 0 and partial tiles, an all-invalid
   row, poisoned unreferenced slots; bf16 with and without rope, and fp8_e4m3 (its per-tensor scale).
2. Timing, ABBA over four repetitions (call 5: the first of a pair runs faster), the suite rows the wide kernel
   runs without split-K; each variant checked against the reference first (gen.gpu_measure.check).
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/staged_out.py [--rows bf16:128:128,...]
"""
import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
import sparsemla  # noqa: E402
import sparsemla.runtime.api as api  # noqa: E402
import sparsemla.runtime.triton_backend as tb  # noqa: E402
from sparsemla.gen.spec import Config  # noqa: E402
from helpers import make_cache, poison_unreferenced, random_indices, reference64, rel_err  # noqa: E402
from variant_rows import alternating, time_rows  # noqa: E402  (the script's folder)

WIDE = Config(64, 64, 1, 8, 2, gluon=True)
ROWS = "bf16:128:128,bf16_nope:128:128,bf16:64:128,bf16:128:64,bf16_nope:128:64,bf16:256:64,bf16:256:128," \
       "fp8:128:128,bf16_nope:4096:128,bf16_nope:4096:64"


def staged(on: bool) -> None:
    tb._STAGED_OUT = on
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


def correctness(dev) -> bool:
    ok_all = True
    for fmt, d_qk, page in (("auto", 576, None), ("auto", 512, None), ("fp8_e4m3", 576, 16)):
        for T, H in ((40, 128), (40, 32)):
            gen = torch.Generator().manual_seed(T * 1000 + H + d_qk)
            topk, slots = 256, 4096
            cache, kw, deq = make_cache(fmt, d_qk, slots, page, torch.bfloat16, gen)
            idx = random_indices(T, topk, slots, gen)
            idx[3] = -1
            tl_ = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
            tl_[:3] = torch.tensor([topk, 0, 1], dtype=torch.int32)
            sink = torch.randn(H, generator=gen)
            sink[0], sink[1] = math.inf, -math.inf
            cache = poison_unreferenced(cache, fmt, page or 1, torch.cat([idx[t, :int(tl_[t])] for t in range(T)]))
            q = torch.randn(T, H, d_qk, generator=gen).bfloat16()
            ref, rlse = reference64(q, deq, idx, d_qk ** -0.5, 512, topk_length=tl_, sink=sink)
            fin = torch.isfinite(rlse)
            staged(True)
            out, lse = sparsemla.sparse_mla(q.to(dev), cache.to(dev), idx.to(dev), sm_scale=d_qk ** -0.5,
                                            kv_format=fmt, topk_length=tl_.to(dev), return_lse=True,
                                            attn_sink=sink.to(dev), backend="triton", config=WIDE, **kw)
            err = rel_err(out.cpu(), ref)
            lerr = (lse.cpu().double()[fin] - rlse[fin]).abs().max().item()
            ok = (torch.isfinite(out).all().item() and err < 1e-2 and lerr < 2e-2
                  and torch.equal(torch.isfinite(lse.cpu()), fin) and bool((out.cpu()[~fin.any(dim=1)] == 0).all()))
            ok_all &= ok
            print(f"{fmt:8s} d_qk={d_qk} T={T} H={H:3d} staged rel err {err:.2e} lse err {lerr:.1e} "
                  f"{'ok' if ok else 'FAIL'}", flush=True)
    staged(False)
    return ok_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    dev = torch.device("cuda")
    print("correctness:", "all ok" if correctness(dev) else "FAILED", flush=True)
    variants = {"shipped": lambda: staged(False), "staged": lambda: staged(True)}
    lines = time_rows(args.rows, variants, alternating(args.reps), dev)
    staged(False)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
