"""Issue 7 experiment (prepared in session 23, run as session 24's call 1 at 1a3c233, where the two knobs below
were module flags of runtime/triton_backend; results: benchmarks/results/session24/README.md). Since then
STAGED_STORE is removed (0.93-0.95x everywhere) and PARTS_FIRST is the runtime's rule (``_parts_first``: where
the combine's grid has at most one program per SM), so this script runs only at 1a3c233.

- The combine kernel's PARTS_FIRST (``triton_backend._COMBINE_PARTS_FIRST``). Read from its SASS (Triton 3.6,
  sm_90a): after the PDL wait the combine loads the LSEs, and the first max over them stalls the warp until
  they arrive; only then are the partials' loads issued, two dependent L2 round trips. With PARTS_FIRST the
  partials and then the LSEs are volatile loads, which ptxas keeps in order, so all of them are issued first.
- The narrow Gluon kernel's STAGED_STORE (``triton_backend._STAGED_STORE``). Its output (or partials) left
  O^T's layout as 4-byte stores, 64 a thread for 16 heads x 512 fp32, and the output took ~1630 of a T=1
  H=128 program's ~10.8K cycles (session 18's profile); through a stage they are 16 stores of 16 bytes.
  tests/test_compile.py checks both in the SASS.

For each suite row given (formats x heads x tokens) whose tuned config splits the top-k or runs the narrow
Gluon kernel: the runtime as it is, each knob on, and both; each checked against the reference (poisoned
inputs, gen.gpu_measure.check), then timed interleaved three times (gen.gpu_measure.time_calls: CUDA-graph
replay over rotating inputs), us per call.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/small_t_knobs.py [--formats bf16 --heads 128 --tokens 1]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config

_default = (tb._COMBINE_PARTS_FIRST, tb._STAGED_STORE)
VARIANTS = {"as shipped": (False, False), "parts first": (True, False), "staged store": (False, True),
            "both": (True, True)}


def knobs(parts_first: bool, staged_store: bool) -> None:
    tb._COMBINE_PARTS_FIRST, tb._STAGED_STORE = parts_first, staged_store
    api.clear_call_cache()  # (a prepared launch keeps the kernels it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="128,64,32,16")
    ap.add_argument("--tokens", default="1,4")
    args = ap.parse_args()
    dev = torch.device("cuda")
    lines = ["| format | T | H | config | " + " | ".join(VARIANTS) + " | shipped/best |",
             "|" + "---|" * (5 + len(VARIANTS))]
    for T in map(int, args.tokens.split(",")):
        for fmt in args.formats.split(","):
            for H in map(int, args.heads.split(",")):
                spec = suite_spec(fmt, H, "sm90")
                cfg = select_config(spec, T, dev)
                combine = cfg.num_splits > 1 and not tb._fused(cfg, T, H)
                narrow = cfg.gluon and cfg.block_h < 64
                if not (combine or narrow):
                    continue
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                ok = {}
                for name, v in VARIANTS.items():
                    knobs(*v)
                    res = check(spec, cfg, kw)
                    ok[name] = "" if res.ok else f" FAILED: {res.reason}"
                sets = timing_sets(spec, T, dev)
                times = {name: [] for name in VARIANTS}
                for _ in range(3):
                    for name, v in VARIANTS.items():
                        if not ok[name]:
                            knobs(*v)
                            times[name].append(time_calls(_calls(sets, cfg))[0])
                best = {name: min(v) for name, v in times.items() if v}
                cells = [(f"{best[n]:.2f}" if n in best else "-") + ok[n] for n in VARIANTS]
                ratio = best["as shipped"] / min(best.values()) if "as shipped" in best else float("nan")
                label = f"h{cfg.block_h} s{cfg.num_splits} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
                line = f"| {fmt} | {T} | {H} | {label} | " + " | ".join(cells) + f" | {ratio:.3f} |"
                print(line, f"(runs: {times})", flush=True)
                lines.append(line)
                del sets, kw
    knobs(*_default)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
