"""Issue 7 experiment (session 22): the narrow bf16 kernel's splits as one thread-block cluster (GluonKernel.cluster).

A program is a cluster of S CTAs (one token and head block; a CTA's rank is its split); each CTA writes its
partials, one cluster barrier, then each CTA merges its heads from all the cluster's partials: no combine
kernel. For each suite row given whose tuned config is the narrow Gluon kernel with 2-16 splits (bf16 and
bf16 NoPE), the runtime's launch (the combine kernel, behind PDL where its rule takes it) against the
cluster: each row checked against the reference with the cluster (poisoned inputs, gen.gpu_measure.check),
before and after its timed CUDA-graph replays, and timed interleaved twice (gen.gpu_measure.time_calls), us
per call.
Run on the GPU after `pip install .`: python3 benchmarks/calls/cluster_merge.py [--heads 128,64 --tokens 1,4]
"""
import argparse

import torch

import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config


def clustered(on: bool):
    tb._CLUSTER = on
    api.clear_call_cache()  # (a prepared launch keeps the choice it was made with)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--formats", default="bf16,bf16_nope")
    ap.add_argument("--heads", default="128,64,32,16")
    ap.add_argument("--tokens", default="1,4")
    args = ap.parse_args()
    dev = torch.device("cuda")
    lines = ["| format | H | T | config | combine kernel | cluster | ratio | check |", "|---|---|---|---|---|---|---|---|"]
    for T in map(int, args.tokens.split(",")):
        for fmt in args.formats.split(","):
            for H in map(int, args.heads.split(",")):
                spec = suite_spec(fmt, H, "sm90")
                cfg = select_config(spec, T, dev)
                S = cfg.num_splits
                label = f"h{cfg.block_h} s{S} st{cfg.num_stages}"
                if not (cfg.gluon and cfg.block_h < 64 and S in (2, 4, 8, 16)):
                    print(f"  {fmt} H={H} T={T}: {label}: not a narrow Gluon grid of 2-16 splits", flush=True)
                    continue
                kw = make_inputs(spec, T, dev, slots=1 << 16, poison=True)
                clustered(True)
                try:
                    res = check(spec, cfg, kw)
                    ok = "ok" if res.ok else f"FAILED: {res.reason}"
                except Exception as e:  # noqa: BLE001 (reported, not fatal)
                    ok = f"error: {type(e).__name__}: {str(e)[:160]}"
                times = {False: [], True: []}
                if ok == "ok":
                    sets = timing_sets(spec, T, dev)
                    for _ in range(2):
                        for on in (False, True):
                            clustered(on)
                            times[on].append(time_calls(_calls(sets, cfg))[0])
                    clustered(True)
                    again = check(spec, cfg, kw)
                    ok += "" if again.ok else f", after the replays FAILED: {again.reason}"
                    del sets
                off = min(times[False]) if times[False] else float("nan")
                on = min(times[True]) if times[True] else float("nan")
                line = f"| {fmt} | {H} | {T} | {label} | {off:.2f} | {on:.2f} | {off / on:.3f} | {ok} |"
                print(line, f"(runs: {times})", flush=True)
                lines.append(line)
                del kw
    clustered(False)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
