"""Issue 7 experiment (prepared in session 23, not yet run): the combine kernel's PARTS_FIRST.

Read from its SASS (Triton 3.6, sm_90a): after the PDL wait the combine loads the LSEs, and the first max over
them stalls the warp until they arrive; only then are the partials' loads issued, so each program pays two
dependent L2 round trips. With PARTS_FIRST the partials and then the LSEs are volatile loads, which ptxas keeps
in order: all of them are issued before any math (tests/test_compile.py checks the SASS). The runtime passes
``triton_backend._COMBINE_PARTS_FIRST`` (off until this is timed).

For each suite row given (formats x heads x tokens) whose tuned config splits the top-k into a combine kernel:
the runtime as it is (its PDL rule and reservation), with PARTS_FIRST off and on; each checked against the
reference (poisoned inputs, gen.gpu_measure.check), then timed interleaved three times
(gen.gpu_measure.time_calls: CUDA-graph replay over rotating inputs), us per call.
Run on the GPU after `pip install .`:
  python3 benchmarks/calls/combine_parts_first.py [--formats bf16 --heads 128 --tokens 1]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import SUITE_FORMATS, suite_spec
from sparsemla.runtime.dispatch import select_config

_default = tb._COMBINE_PARTS_FIRST


def parts_first(on: bool) -> None:
    tb._COMBINE_PARTS_FIRST = on
    api.clear_call_cache()  # (a prepared launch keeps the combine it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default=",".join(SUITE_FORMATS))
    ap.add_argument("--heads", default="128,64,32,16")
    ap.add_argument("--tokens", default="1,4,16")
    args = ap.parse_args()
    dev = torch.device("cuda")
    lines = ["| format | T | H | config | off | on | off/on |", "|---|---|---|---|---|---|---|"]
    for T in map(int, args.tokens.split(",")):
        for fmt in args.formats.split(","):
            for H in map(int, args.heads.split(",")):
                spec = suite_spec(fmt, H, "sm90")
                cfg = select_config(spec, T, dev)
                if cfg.num_splits < 2 or tb._fused(cfg, T, H):
                    continue
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                ok = {}
                for on in (False, True):
                    parts_first(on)
                    res = check(spec, cfg, kw)
                    ok[on] = "" if res.ok else f" FAILED: {res.reason}"
                sets = timing_sets(spec, T, dev)
                times = {False: [], True: []}
                for _ in range(3):
                    for on in (False, True):
                        if not ok[on]:
                            parts_first(on)
                            times[on].append(time_calls(_calls(sets, cfg))[0])
                best = {on: (f"{min(v):.2f}" if v else "-") + ok[on] for on, v in times.items()}
                ratio = min(times[False]) / min(times[True]) if times[False] and times[True] else float("nan")
                label = f"h{cfg.block_h} s{cfg.num_splits} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
                line = f"| {fmt} | {T} | {H} | {label} | {best[False]} | {best[True]} | {ratio:.3f} |"
                print(line, f"(runs: {times})", flush=True)
                lines.append(line)
                del sets, kw
    parts_first(_default)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
