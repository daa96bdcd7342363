"""Issue 7 experiment (session 33, run in session 34 call 1 at f42dc42): GluonKernel.ids_early (tile 0's slot ids
loaded before topk_len, so the two global latencies overlap; the narrow kernel's prologue copies them by cp.async for
its gathering group) against the shipped kernel, on bf16 rows, with and without a topk_length argument (engines pass
one: SGLang's DeepSeek-V4 path; the suite does not; measured 0.997-1.016x and removed, commit f42dc42 has it). Each
variant is first checked on poisoned inputs with random lengths (0, 1, partial tiles, full), then both are timed in
alternating orders (CUDA-graph replay over rotating inputs; with lengths, every token's is the full top-k), median
us. Run on the GPU after `pip install .`:
  python3 benchmarks/calls/ids_early.py [--rows bf16:1:128,...] [--reps 4]
"""
import argparse
import statistics

import torch

from gluon_variant import with_fields  # (the script's folder)
from variant_rows import alternating, timed_in_orders
from sparsemla.gen.gpu_measure import check, make_inputs, timing_sets
from sparsemla.gen.spec import config_label
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config

ROWS = "bf16:1:128,bf16_nope:1:128,bf16:1:64,bf16:4:128,bf16:4:16,bf16:16:16"
VARIANTS = {"shipped": None, "ids_early": {"ids_early": True}}
SETUPS = {name: (lambda fields=fields: with_fields(fields)) for name, fields in VARIANTS.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    dev = torch.device("cuda")
    lines = ["| format | T | H | config | topk_length | shipped us | ids_early us | shipped / ids_early |",
             "|---|---|---|---|---|---|---|---|"]
    for row in args.rows.split(","):
        fmt, T, H = row.split(":")
        T, H = int(T), int(H)
        spec = suite_spec(fmt, H, "sm90")
        cfg = select_config(spec, T, dev)
        kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
        g = torch.Generator(device=dev).manual_seed(T * H)
        lengths = torch.randint(0, spec.topk + 1, (T,), generator=g, device=dev, dtype=torch.int32)
        lengths[: min(T, 4)] = torch.tensor([0, 1, 100, spec.topk], dtype=torch.int32, device=dev)[: min(T, 4)]
        ok = {}
        for name, fields in VARIANTS.items():
            with_fields(fields)
            res = [check(spec, cfg, kw), check(spec, cfg, dict(kw, topk_length=lengths))]
            ok[name] = all(r.ok for r in res)
            print(f"{row} {config_label(cfg)} {name}: " + ", ".join(
                f"{'ok' if r.ok else 'FAILED ' + r.reason} (rel err {r.error:.2e})" for r in res), flush=True)
        sets = timing_sets(spec, T, dev)
        full = torch.full((T,), spec.topk, dtype=torch.int32, device=dev)
        for mode, kws in (("none", sets), ("full", [dict(s, topk_length=full) for s in sets])):
            times = timed_in_orders(kws, cfg, SETUPS, alternating(args.reps), skip={n for n in VARIANTS if not ok[n]})
            med = {n: statistics.median(v) for n, v in times.items() if v}
            cells = [f"{med[n]:.2f}" if n in med else "FAILED" for n in VARIANTS]
            ratio = f"{med['shipped'] / med['ids_early']:.3f}" if len(med) == 2 else "-"
            lines.append(f"| {fmt} | {T} | {H} | {config_label(cfg)} | {mode} | " + " | ".join(cells) + f" | {ratio} |")
            print(lines[-1], f"(runs: {times})", flush=True)
        with_fields(None)
        del sets, kw
        torch.cuda.empty_cache()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
