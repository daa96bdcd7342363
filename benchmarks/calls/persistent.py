"""Issue 7 experiment (session 24, call 3 at 2e13d2a, where runtime/triton_backend._persistent took the persistent
kernel for every wide bf16 grid with more units than SMs when _PERSISTENT was set; its rule is narrower since):
the wide Gluon kernel with a bf16 cache as a persistent kernel.

One program per SM loops over the units (token, head block) u = pid, pid + programs, ...; A gathers the next
unit's tile 0 under the current unit's last tile and B copies the next unit's Q under its P.V and output
(templates/sparse_mla_gluon.py.jinja, GluonKernel.persistent; runtime/triton_backend._persistent, off unless
_PERSISTENT). Session 18's profile had a wide program spend ~7-12% of its time starting (Q's 72 KB) and
finishing with nothing else on its SM (DEVELOPERS.md, the lead for T=128 H=128).

1. Correctness, persistent and as shipped, against the float64 reference (tests/helpers.py): top-k 256 (4 tiles
   a unit), more units than SMs, topk_length with units of 0, 1 and partial tiles (the md_free barrier and the
   skipped tile-0 gathers), an all-invalid row, poisoned unreferenced slots, sinks with +/-inf, LSE, q rows not
   16-byte aligned (the runtime copies them).
2. Timing: the suite rows with the wide kernel and no split-K whose units outnumber the SMs, shipped and
   persistent, each checked against the reference first (gen.gpu_measure.check), then timed interleaved three
   times (CUDA-graph replay over rotating inputs), median us per call.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/persistent.py [--rows bf16:128:128,...] [--no-check]
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
from variant_rows import time_rows  # noqa: E402  (the script's folder)

WIDE = Config(64, 64, 1, 8, 2, gluon=True)
ROWS = "bf16:128:128,bf16_nope:128:128,bf16:256:64,bf16_nope:256:64,bf16:256:128,bf16_nope:256:128," \
       "bf16:4096:128,bf16_nope:4096:64,bf16:4096:64,bf16_nope:4096:128"


def persistent(on: bool) -> None:
    tb._PERSISTENT = on
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


VARIANTS = {"shipped": lambda: persistent(False), "persistent": lambda: persistent(True)}


def correctness(dev, variants=VARIANTS) -> bool:
    """The cases above for each of ``variants`` ({name: function that sets the runtime up}); True if all pass."""
    ok_all = True
    for d_qk in (576, 512):
        for T, H, features in ((400, 64, "plain"), (150, 128, "sink+lse"), (300, 16, "sink+lse"), (140, 64, "short")):
            gen = torch.Generator().manual_seed(T * 1000 + H + d_qk)
            topk, slots = 256, 4096
            cache, kw, deq = make_cache("auto", d_qk, slots, None, torch.bfloat16, gen)
            idx = random_indices(T, topk, slots, gen)
            idx[3] = -1
            tl_ = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
            if features == "short":  # runs of units with 0 or 1 tiles (md_free, skipped tile-0 gathers)
                tl_ = torch.tensor([0, 1, 0, 0, 63, 64, 65, 0, 1, 1] * (T // 10), dtype=torch.int32)
            tl_[:4] = torch.tensor([topk, 0, 1, topk], dtype=torch.int32)
            sink = None
            extra = {}
            if features == "sink+lse":
                sink = torch.randn(H, generator=gen)
                sink[0], sink[1] = math.inf, -math.inf
                extra = dict(attn_sink=sink.to(dev))
            cache = poison_unreferenced(cache, "auto", 1, torch.cat([idx[t, :int(tl_[t])] for t in range(T)]))
            q = torch.randn(T, H, d_qk, generator=gen).bfloat16()
            q_dev = q.to(dev)
            if features != "plain":  # rows not 16-byte aligned: the runtime copies q first
                q_dev = torch.zeros(T, H, d_qk + 3, dtype=q.dtype, device=dev)[..., :d_qk]
                q_dev.copy_(q)
            ref, rlse = reference64(q, deq, idx, d_qk ** -0.5, 512, topk_length=tl_, sink=sink)
            fin = torch.isfinite(rlse)
            for name, setup in variants.items():
                setup()
                out, lse = sparsemla.sparse_mla(q_dev, cache.to(dev), idx.to(dev), sm_scale=d_qk ** -0.5,
                                                topk_length=tl_.to(dev), return_lse=True, backend="triton",
                                                config=WIDE, **kw, **extra)
                err = rel_err(out.cpu(), ref)
                lerr = (lse.cpu().double()[fin] - rlse[fin]).abs().max().item()
                ok = (torch.isfinite(out).all().item() and err < 1e-2 and lerr < 2e-2
                      and torch.equal(torch.isfinite(lse.cpu()), fin)
                      and bool((out.cpu()[~fin.any(dim=1)] == 0).all()))
                ok_all &= ok
                print(f"d_qk={d_qk} T={T:4d} H={H:3d} {features:9s} {name:10s} "
                      f"rel err {err:.2e} lse err {lerr:.1e} {'ok' if ok else 'FAIL'}", flush=True)
    return ok_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    if not args.no_check:
        ok = correctness(dev)
        persistent(False)
        print("correctness:", "all ok" if ok else "FAILED", flush=True)
    lines = time_rows(args.rows, VARIANTS, ((0, 1),) * 3, dev)  # (shipped first in every repetition)
    persistent(False)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
