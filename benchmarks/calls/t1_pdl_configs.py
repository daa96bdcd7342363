"""Issue 7 experiment (session 20): with the combine a programmatic dependent of Gluon grids of at most half the
SMs (runtime/triton_backend._pdl), do T=1 rows gain from a config with such a grid?

For bf16 and bf16 NoPE at T=1 with 64 and 128 heads, the shipped config (128 programs: no PDL) against
Gluon configs of 32-64 programs (PDL), each checked against the reference (poisoned inputs) and timed as
a tuning trial (gen.gpu_measure.time_calls), interleaved twice; best of two, us per call.
Run on the GPU after `pip install .`: python3 benchmarks/calls/t1_pdl_configs.py
"""
import torch

from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.spec import Config
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config

# (block_h, num_splits, num_stages): 32-64 programs at T=1 with 64 or 128 heads
CANDIDATES = {128: [(16, 8, 2), (16, 8, 1), (32, 16, 2), (32, 8, 2), (64, 32, 2), (64, 16, 2)],
              64: [(16, 16, 2), (16, 16, 1), (16, 8, 2), (32, 32, 2), (32, 16, 2), (64, 32, 2)]}


def main():
    dev = torch.device("cuda")
    lines = ["| format | H | config | programs | check | us |", "|---|---|---|---|---|---|"]
    for fmt in ("bf16", "bf16_nope"):
        for H in (128, 64):
            spec = suite_spec(fmt, H, "sm90")
            shipped = select_config(spec, 1, dev)
            cfgs = [shipped] + [Config(bh, 64, s, 8, st, gluon=True) for bh, s, st in CANDIDATES[H]]
            kw = make_inputs(spec, 1, dev, slots=1 << 16, poison=True)
            sets = timing_sets(spec, 1, dev)
            ok, times = {}, {c: [] for c in cfgs}
            for c in cfgs:
                try:
                    res = check(spec, c, kw)
                    ok[c] = "ok" if res.ok else f"FAILED: {res.reason}"
                except Exception as e:  # noqa: BLE001 (a config that does not build is a result)
                    ok[c] = f"{type(e).__name__}: {str(e)[:120]}"
            for _ in range(2):
                for c in cfgs:
                    if ok[c] == "ok":
                        times[c].append(time_calls(_calls(sets, c))[0])
            for c in cfgs:
                label = f"h{c.block_h} s{c.num_splits} st{c.num_stages}{' gl' if c.gluon else ''}" + \
                    (" (shipped)" if c == shipped else "")
                us = f"{min(times[c]):.2f}" if times[c] else "-"
                line = f"| {fmt} | {H} | {label} | {-(-H // c.block_h) * c.num_splits} | {ok[c]} | {us} |"
                print(line, flush=True)
                lines.append(line)
            del kw, sets
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
