"""Issue 7 experiment (session 20): the combine kernel as a programmatic dependent (PDL) of one-wave Gluon grids.

Session 16 measured PDL for every split launch: 0.4-0.9 us faster at T=1 behind the Gluon kernel, slower at
T=4 where 128-256 programs ran in two waves (the early combine programs held SMs the second wave needed),
and behind the Triton kernel (which does not let it launch early). runtime/triton_backend._pdl now takes it
only for a Gluon kernel whose grid fits one wave. Every suite row at T = 1, 4, 16 whose shipped config is
such a split grid is checked against the reference with PDL (poisoned inputs, gen.gpu_measure.check) and
timed with and without it, interleaved twice (gen.gpu_measure.time_calls: CUDA-graph replay over rotating
inputs, as a tuning trial), us per call. Call 4 ran it with the rule of 86620d6 as the switch; call 6
(T = 16, 32, 64) with the rule of 5a2ab54, which left PDL off in both modes (so it timed the noise: 0.99-1.00x);
since call 7 each mode is forced, whatever the runtime's rule.
Run on the GPU after `pip install .`: python3 benchmarks/calls/pdl_one_wave.py [--formats bf16,fp8 ...]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config


def timed(sets, cfg, pdl: bool) -> float:
    """us per call with the combine launched as a programmatic dependent (pdl) or not, whatever the
    runtime's rule (triton_backend._pdl) would choose."""
    rule = tb._pdl
    tb._pdl = lambda *rule_args: pdl
    api.clear_call_cache()  # (a prepared launch keeps the PDL choice it was made with)
    try:
        return time_calls(_calls(sets, cfg))[0]
    finally:
        tb._pdl = rule
        api.clear_call_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--tokens", default="1,4,16")
    args = ap.parse_args()
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    lines = ["| format | H | T | config | grid | no PDL | PDL | ratio | check |", "|---|---|---|---|---|---|---|---|---|"]
    for fmt in args.formats.split(","):
        for H in (16, 32, 64, 128):
            spec = suite_spec(fmt, H, "sm90")
            for T in map(int, args.tokens.split(",")):
                cfg = select_config(spec, T, dev)
                grid = T * -(-H // cfg.block_h) * cfg.num_splits
                if not (cfg.gluon and cfg.num_splits > 1 and grid <= sms):
                    print(f"  {fmt} H={H} T={T}: {cfg} grid {grid}: the rule does not apply", flush=True)
                    continue
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                rule = tb._pdl
                tb._pdl = lambda *rule_args: True
                api.clear_call_cache()
                res = check(spec, cfg, kw)  # with PDL
                tb._pdl = rule
                api.clear_call_cache()
                ok = "ok" if res.ok else f"FAILED: {res.reason}"
                sets = timing_sets(spec, T, dev)
                times = {False: [], True: []}
                for _ in range(2):
                    for pdl in (False, True):
                        times[pdl].append(timed(sets, cfg, pdl))
                off, on = min(times[False]), min(times[True])
                label = f"h{cfg.block_h} s{cfg.num_splits} st{cfg.num_stages} gl"
                line = (f"| {fmt} | {H} | {T} | {label} | {grid} | {off:.2f} | {on:.2f} | {off / on:.3f} | {ok} |")
                print(line, f"(runs: {times[False]} / {times[True]})", flush=True)
                lines.append(line)
                del sets, kw
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
