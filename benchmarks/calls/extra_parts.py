"""Issue 7 follow-up (prepared in session 25 without a GPU, not yet run): a call with an extra cache (DeepSeek-V4's
SWA cache beside its compressed one) as one Triton kernel walking both lists (the runtime's default: no table entry
holds an extra cache, so it runs the arch's default config) or as two launches and a merge
(runtime/triton_backend.PartsLaunch, SPARSEMLA_EXTRA_PARTS=1: each cache's list with the config a call of that
cache alone gets, for the main list the tuned Gluon kernel's, partials merged by sparse_mla_combine_parts).

Session 27 adds a third variant, "gluon" (SPARSEMLA_EXTRA_GLUON=1, triton_backend.extra_gluon): one Gluon launch with
the main list's tuned entry, the extra list's programs as more splits of the grid (caches of one page size and the
same strides; where that does not hold, or the main entry is not a Gluon one, it is the one-kernel path).

1. Correctness of each against the float64 reference (tests/helpers.py) on poisoned caches: model1 with extra
   pages of 64 and 256 tokens, fp8_e4m3 with a scale per cache, bf16; sinks with +/-inf, LSE, topk_length and
   extra_topk_length with 0 and partial tiles, a row whose only valid slots are the extra cache's, an all-invalid
   row; 128 and 16 heads.
2. Timing of V4-like rows (model1, top-k 2048 plus an extra list of 128, sink; T = 1..256, 64 and 128 heads): CUDA-
   graph replay over rotating inputs (gen.gpu_measure), in rotated orders over six repetitions, median us; the last
   columns are one / parts and one / gluon.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/extra_parts.py [--rows model1:128:64,...] [--no-check]
"""
import argparse
import math
import os
import statistics
import sys
from dataclasses import replace

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
import sparsemla  # noqa: E402
import sparsemla.runtime.api as api  # noqa: E402
import sparsemla.runtime.triton_backend as tb  # noqa: E402
from sparsemla.gen.gpu_measure import timing_sets  # noqa: E402
from sparsemla.gen.spec import config_label  # noqa: E402
from sparsemla.gen.suite import suite_spec  # noqa: E402
from sparsemla.runtime.dispatch import select_config  # noqa: E402
from helpers import reference64, rel_err, two_caches  # noqa: E402
from variant_rows import timed_in_orders  # noqa: E402  (the script's folder)

VARIANTS = ("one kernel", "parts", "gluon")
ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0), (1, 0, 2), (0, 2, 1))
ROWS = "model1:1:128,model1:4:128,model1:64:128,model1:256:128,model1:1:64,model1:64:64"


def variant(name: str) -> None:
    tb._EXTRA_PARTS = name == "parts"
    tb._EXTRA_GLUON = name == "gluon"
    api.clear_call_cache()  # (a prepared launch keeps the launch it was made with)


def correctness(dev) -> bool:
    ok_all = True
    for fmt, d_qk, page, x_page in (("model1", 512, 64, 64), ("model1", 512, 64, 256), ("fp8_e4m3", 576, 16, 16),
                                    ("auto", 576, None, None)):
        for T, H in ((70, 128), (70, 16)):
            gen = torch.Generator().manual_seed(T * 1000 + H + (x_page or 0))
            topk, xtopk = 512, 128
            tl_ = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
            xl_ = torch.randint(0, xtopk + 1, (T,), generator=gen, dtype=torch.int32)
            tl_[:3] = torch.tensor([topk, 0, 1], dtype=torch.int32)
            xl_[:3] = torch.tensor([0, xtopk, 1], dtype=torch.int32)
            xl_[4] = 0  # token 3: only the extra cache's slots; token 4: nothing (its main row all -1)
            cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(
                fmt, d_qk, page, x_page, torch.bfloat16, gen, topk=topk, xtopk=xtopk, slots=4096, x_slots=2048,
                tlen=tl_, xlen=xl_, invalid_rows=(3, 4))
            sink = torch.randn(H, generator=gen)
            sink[0], sink[1] = math.inf, -math.inf
            q = torch.randn(T, H, d_qk, generator=gen).bfloat16()
            ref, rlse = reference64(q, deq, idx, d_qk ** -0.5, 512, topk_length=tl_, sink=sink, x_deq=xdeq,
                                    x_indices=xidx, x_topk_length=xl_)
            fin = torch.isfinite(rlse)
            for name in VARIANTS:
                variant(name)
                out, lse = sparsemla.sparse_mla(q.to(dev), cache.to(dev), idx.to(dev), sm_scale=d_qk ** -0.5,
                                                kv_format=fmt, topk_length=tl_.to(dev), return_lse=True,
                                                attn_sink=sink.to(dev), extra_kv_cache=xcache.to(dev),
                                                extra_indices=xidx.to(dev), extra_topk_length=xl_.to(dev),
                                                backend="triton", **kw)
                out, lse = out.cpu(), lse.cpu()
                err = rel_err(out, ref) if torch.isfinite(out).all() else math.inf
                lse_ok = torch.equal(torch.isfinite(lse), fin) and bool((lse[~fin] == math.inf).all()) and \
                    (lse[fin].double() - rlse[fin]).abs().max().item() < 2e-2
                ok = err < 1e-2 and lse_ok and bool((out[4] == 0).all()) and bool((out[:, 0] == 0).all())
                ok_all &= ok
                kind = type(api._calls[next(reversed(api._calls))].launch).__name__ if api._calls else "?"
                cfg = api._calls[next(reversed(api._calls))].config if api._calls else None
                kind += " gluon" if getattr(cfg, "gluon", False) else ""
                print(f"{'ok ' if ok else 'FAIL'} {name:10s} ({kind}) {fmt} page {page} extra page {x_page} T={T} "
                      f"H={H}: rel err {err:.2e}, lse {'ok' if lse_ok else 'WRONG'}", flush=True)
    variant("one kernel")
    return ok_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--extra-topk", type=int, default=128)
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    if not args.no_check:
        print("correctness:", "all ok" if correctness(dev) else "FAILED", flush=True)
    lines = ["| format | T | H | extra top-k | configs (one kernel / main, extra parts) | one kernel | parts | gluon | "
             "one / parts | one / gluon |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in args.rows.split(","):
        fmt, T, H = row.split(":")
        T, H = int(T), int(H)
        base = suite_spec(fmt, H, "sm90")
        spec = replace(base, has_sink=True, extra_topk=args.extra_topk, extra_page_size=base.page_size)
        sets = timing_sets(spec, T, dev)
        labels = [config_label(select_config(spec, T, dev))] + \
            [config_label(select_config(s, T, dev)) for s in tb.part_specs(spec)]
        times = timed_in_orders(sets, None, {name: (lambda name=name: variant(name)) for name in VARIANTS}, ORDERS)
        med = {name: statistics.median(v) for name, v in times.items()}
        line = (f"| {fmt} | {T} | {H} | {args.extra_topk} | {labels[0]} / {labels[1]}, {labels[2]} | "
                f"{med['one kernel']:.2f} | {med['parts']:.2f} | {med['gluon']:.2f} | "
                f"{med['one kernel'] / med['parts']:.3f} | {med['one kernel'] / med['gluon']:.3f} |")
        print(line, f"(runs: {times})", flush=True)
        lines.append(line)
        del sets
        torch.cuda.empty_cache()
    variant("one kernel")
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
