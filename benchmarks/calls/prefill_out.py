"""Issue 7 experiment (prepared at the end of session 24, not yet run): the wide bf16 kernel's output path at
prefill and T >= 128. Three variants, forced (runtime/triton_backend._persistent and _staged_out patched):
- "staged": not persistent, output through a stage (what the runtime runs for every wide row but bf16 prefill);
- "persistent": the persistent kernel with direct stores (what it runs for bf16 prefill, persistent_for);
- "persistent+staged": the persistent kernel writing through the last tile's stage (GluonKernel.persistent with
  staged_out, prepared in session 24 and never run on the GPU).

1. Correctness of "persistent+staged" (and the other two) against the float64 reference (tests/helpers.py), as
   benchmarks/calls/persistent.py checks the persistent kernel: more units than SMs, runs of units of 0 and 1
   tiles, sinks with +/-inf, LSE, unaligned q, poisoned unreferenced slots; d_qk 576 and 512.
2. Timing in rotated orders (a Latin square over six repetitions: the first of a pair runs faster, session 24
   call 5), median us. bf16 T=64 H=128 (128 units) is the null row: every variant is the staged kernel there.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/prefill_out.py [--rows bf16:4096:128,...] [--no-check]
"""
import argparse
import math
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
import sparsemla  # noqa: E402
import sparsemla.runtime.api as api  # noqa: E402
import sparsemla.runtime.triton_backend as tb  # noqa: E402
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets  # noqa: E402
from sparsemla.gen.spec import Config  # noqa: E402
from sparsemla.gen.suite import suite_spec  # noqa: E402
from sparsemla.runtime.dispatch import select_config  # noqa: E402
from helpers import make_cache, poison_unreferenced, random_indices, reference64, rel_err  # noqa: E402

WIDE = Config(64, 64, 1, 8, 2, gluon=True)
VARIANTS = ("staged", "persistent", "persistent+staged")
ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0), (1, 0, 2), (0, 2, 1))
ROWS = "bf16:64:128,bf16:4096:128,bf16:4096:64,bf16_nope:4096:128,bf16_nope:4096:64,bf16:128:128,bf16:256:128"
_rules = (tb._persistent, tb._staged_out)


def _wide(spec, config) -> bool:
    return config.gluon and config.block_h == 64 and config.num_splits == 1 and spec.kv_format == "auto"


def variant(name: str) -> None:
    on = "persistent" in name
    tb._persistent = lambda spec, config, units, device: on and _wide(spec, config) and units > 132
    tb._staged_out = lambda config, persistent: "staged" in name and config.gluon and config.block_h == 64 \
        and config.num_splits == 1
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


def correctness(dev) -> bool:
    ok_all = True
    for d_qk in (576, 512):
        for T, H, features in ((400, 64, "plain"), (150, 128, "sink+lse"), (300, 16, "sink+lse"), (140, 64, "short")):
            gen = torch.Generator().manual_seed(T * 1000 + H + d_qk)
            topk, slots = 256, 4096
            cache, kw, deq = make_cache("auto", d_qk, slots, None, torch.bfloat16, gen)
            idx = random_indices(T, topk, slots, gen)
            idx[3] = -1
            tl_ = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
            if features == "short":  # runs of units with 0 or 1 tiles
                tl_ = torch.tensor([0, 1, 0, 0, 63, 64, 65, 0, 1, 1] * (T // 10), dtype=torch.int32)
            tl_[:4] = torch.tensor([topk, 0, 1, topk], dtype=torch.int32)
            sink, extra = None, {}
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
            for name in VARIANTS:
                variant(name)
                out, lse = sparsemla.sparse_mla(q_dev, cache.to(dev), idx.to(dev), sm_scale=d_qk ** -0.5,
                                                topk_length=tl_.to(dev), return_lse=True, backend="triton",
                                                config=WIDE, **kw, **extra)
                err = rel_err(out.cpu(), ref)
                lerr = (lse.cpu().double()[fin] - rlse[fin]).abs().max().item()
                ok = (torch.isfinite(out).all().item() and err < 1e-2 and lerr < 2e-2
                      and torch.equal(torch.isfinite(lse.cpu()), fin)
                      and bool((out.cpu()[~fin.any(dim=1)] == 0).all()))
                ok_all &= ok
                print(f"d_qk={d_qk} T={T:4d} H={H:3d} {features:9s} {name:17s} rel err {err:.2e} "
                      f"lse err {lerr:.1e} {'ok' if ok else 'FAIL'}", flush=True)
    return ok_all


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    if not args.no_check:
        print("correctness:", "all ok" if correctness(dev) else "FAILED", flush=True)
    lines = ["| format | T | H | config | " + " | ".join(VARIANTS) + " |", "|" + "---|" * (4 + len(VARIANTS))]
    for row in args.rows.split(","):
        fmt, T, H = row.split(":")
        T, H = int(T), int(H)
        spec = suite_spec(fmt, H, "sm90")
        cfg = select_config(spec, T, dev)
        kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
        ok = {}
        for name in VARIANTS:
            variant(name)
            res = check(spec, cfg, kw)
            ok[name] = "" if res.ok else f" FAILED: {res.reason}"
        sets = timing_sets(spec, T, dev)
        times = {name: [] for name in VARIANTS}
        for order in ORDERS:
            for i in order:
                name = VARIANTS[i]
                if not ok[name]:
                    variant(name)
                    times[name].append(time_calls(_calls(sets, cfg))[0])
        cells = [(f"{statistics.median(times[n]):.2f}" if times[n] else "-") + ok[n] for n in VARIANTS]
        label = f"h{cfg.block_h} s{cfg.num_splits} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
        line = f"| {fmt} | {T} | {H} | {label} | " + " | ".join(cells) + " |"
        print(line, f"(runs: {times})", flush=True)
        lines.append(line)
        del sets, kw
        torch.cuda.empty_cache()
    tb._persistent, tb._staged_out = _rules
    api.clear_call_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
