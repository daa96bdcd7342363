"""Issue 7 experiment (session 23): how many combine programs share an SM, with and without PDL.

The combine kernel's programs are light (4 warps, one token and head, one 32 KB read of partials at 16
splits). Launched as a programmatic dependent (PDL) of an attention grid that leaves few SMs free, the early
ones pack onto those SMs as many as fit and then merge there, one SM doing the work of many: with 128
programs on 132 SMs PDL lost (0.75-0.98x, session 20), and at T=4 the PDL combine still costs 2.4-2.6 us
(session 22, call 5). Call 1 capped them by warps (16 or 32 a program): slower everywhere, with or without
PDL (the merge itself got slower). This caps them by shared memory instead: each program reserves R bytes
(runtime/triton_backend._combine_reserve; the kernel is unchanged), so at most 228 KB / (R + 1 KB) fit on an
SM.

For each suite row given (formats x heads x tokens) whose tuned config splits the top-k into a combine
kernel: forced (PDL, R) pairs and the runtime's current choice; each checked against the reference
(poisoned inputs, gen.gpu_measure.check), all timed interleaved twice (gen.gpu_measure.time_calls:
CUDA-graph replay over rotating inputs), us per call; the launch's shared memory as read back from the
direct launcher is printed per pair.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/combine_place.py [--formats bf16 --heads 128 --tokens 1 --pairs 0:0,1:0,1:114]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config

_pdl_rule, _reserve_rule, _init = tb._pdl, tb._combine_reserve, tb.TritonLaunch.__init__
latest = []  # the launches prepared since the last force()


def _record(self, *a, **kw):
    _init(self, *a, **kw)
    latest.append(self)


tb.TritonLaunch.__init__ = _record


def force(pair):
    """The runtime's rules back (None), or (pdl, reserved KB) forced."""
    if pair is None:
        tb._pdl, tb._combine_reserve = _pdl_rule, _reserve_rule
    else:
        tb._pdl = lambda *rule_args: pair[0]
        tb._combine_reserve = lambda *rule_args: pair[1] * 1024
    api.clear_call_cache()  # (a prepared launch keeps the kernels it was made with)
    latest.clear()


def shared_launched() -> str:
    """The combine's shared memory per program as its direct launcher passes it, from the last launch."""
    comb = latest[-1].combine if latest else None
    if comb is None or comb.direct is None:
        return "no direct launch"
    return f"{comb.direct.metadata[2]} B"


def label(pair):
    return f"{'PDL' if pair[0] else 'no PDL'} r{pair[1]}K"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="128,64,32,16")
    ap.add_argument("--tokens", default="1,4")
    ap.add_argument("--pairs", default="0:0,1:0,1:48,1:76,1:114,0:114", help="pdl:reserved-KB pairs to force")
    args = ap.parse_args()
    pairs = [(bool(int(p.split(":")[0])), int(p.split(":")[1])) for p in args.pairs.split(",")]
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    head = ("| format | T | H | config | grid | " + " | ".join(label(c) for c in pairs)
            + " | rule | rule's time | rule/best |")
    lines = [head, "|" + "---|" * (8 + len(pairs))]
    for T in map(int, args.tokens.split(",")):
        for fmt in args.formats.split(","):
            for H in map(int, args.heads.split(",")):
                spec = suite_spec(fmt, H, "sm90")
                cfg = select_config(spec, T, dev)
                S = cfg.num_splits
                if S < 2 or tb._fused(cfg, T, H):
                    continue
                grid = T * -(-H // cfg.block_h) * S
                combine_grid = T * H * (spec.d_v // tb.combine_columns(S, spec.d_v))
                rule_pdl = _pdl_rule(cfg, grid, combine_grid, dev)
                rule = (rule_pdl, _reserve_rule(rule_pdl, grid, combine_grid, dev) // 1024)
                cands = pairs + [rule] * (rule not in pairs)
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                ok = {}
                for c in cands:
                    force(c)
                    try:
                        res = check(spec, cfg, kw)
                        ok[c] = "" if res.ok else f" FAILED: {res.reason}"
                    except Exception as e:  # noqa: BLE001 (reported, not fatal)
                        ok[c] = f" error: {type(e).__name__}: {str(e)[:100]}"
                sets = timing_sets(spec, T, dev)
                times = {c: [] for c in cands}
                launched = {}
                for _ in range(2):
                    for c in cands:
                        if not ok.get(c):
                            force(c)
                            times[c].append(time_calls(_calls(sets, cfg))[0])
                            launched[c] = shared_launched()
                best = {c: min(v) for c, v in times.items() if v}
                cfg_s = f"h{cfg.block_h} s{S} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
                cells = [f"{best[c]:.2f}" if c in best else "-" for c in cands]
                cells = [x + ok.get(c, "") for x, c in zip(cells, cands)]
                ratio = best[rule] / min(best.values()) if rule in best else float("nan")
                line = (f"| {fmt} | {T} | {H} | {cfg_s} | {grid}/{sms} | " + " | ".join(cells[:len(pairs)])
                        + f" | {label(rule)} | {cells[cands.index(rule)]} | {ratio:.3f} |")
                print(line, flush=True)
                print("   combine shared memory as launched:", {label(c): v for c, v in launched.items()}, flush=True)
                lines.append(line)
                del sets, kw
    force(None)
    tb.TritonLaunch.__init__ = _init
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
