"""Issue 7 diagnostic (session 24, call 5): where the wide bf16 kernel's time goes at T=128 H=128 (147 us, target
140). The persistent kernel (call 3) hid the second unit's start on each SM and gained nothing there, so: is the
time in the tiles or fixed per round?

Every token gets the same topk_length L (L / 64 tiles a unit); the kernel time against L is a line whose slope is
the cost of one tile on every SM and whose intercept is what does not scale with the tiles (launch, Q, first
gathers, output, the rounds' edges). Shipped (non-persistent) and persistent (forced) at T=64 H=128 (128 units,
one round) and T=128 H=128 (256 units, two), bf16 with and without rope. Each variant is checked against the
reference at one L first. CUDA-graph replay over rotating inputs (gen.gpu_measure), interleaved twice, median us.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/wide_tiles.py
"""
import statistics

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.spec import Config
from sparsemla.gen.suite import suite_spec

WIDE = Config(64, 64, 1, 8, 2, gluon=True)
LENGTHS = (2048, 1536, 1024, 512, 256, 64)
_rule = tb._persistent


def persistent(on: bool) -> None:
    tb._persistent = (lambda spec, config, units, device: units > 132) if on else (lambda *a: False)
    api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)


def fit(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def main():
    dev = torch.device("cuda")
    summary = ["| format | T | H | kernel | " + " | ".join(f"L={L}" for L in LENGTHS) +
               " | us per tile-round | intercept us |", "|" + "---|" * (6 + len(LENGTHS))]
    for fmt in ("bf16", "bf16_nope"):
        for T in (64, 128):
            spec = suite_spec(fmt, 128, "sm90")
            kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
            kw["topk_length"] = torch.full((T,), 1000, dtype=torch.int32, device=dev)
            ok = {}
            for on in (False, True):
                persistent(on)
                res = check(spec, WIDE, kw)
                ok[on] = res.ok
                print(f"{fmt} T={T} {'persistent' if on else 'shipped'} check: {'ok' if res.ok else res.reason}",
                      flush=True)
            sets = timing_sets(spec, T, dev)
            times = {(on, L): [] for on in (False, True) for L in LENGTHS}
            for _ in range(2):
                for L in LENGTHS:
                    for s in sets:
                        s["topk_length"] = torch.full((T,), L, dtype=torch.int32, device=dev)
                    for on in (False, True):
                        if ok[on]:
                            persistent(on)
                            times[(on, L)].append(time_calls(_calls(sets, WIDE))[0])
            units = T * 2
            rounds = -(-units // 132)
            for on in (False, True):
                if not ok[on]:
                    continue
                med = [statistics.median(times[(on, L)]) for L in LENGTHS]
                slope, icpt = fit([rounds * L / 64 for L in LENGTHS], med)
                line = (f"| {fmt} | {T} | 128 | {'persistent' if on else 'shipped'} | "
                        + " | ".join(f"{m:.1f}" for m in med) + f" | {slope:.3f} | {icpt:.1f} |")
                print(line, flush=True)
                summary.append(line)
            del sets, kw
            torch.cuda.empty_cache()
    tb._persistent = _rule
    api.clear_call_cache()
    print("\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
