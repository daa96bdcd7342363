"""Issue 7 experiment (prepared in session 30 without a GPU): the Gluon attention kernel launched as a programmatic
dependent of the stream's previous kernel (GluonKernel.pdl_wait, SPARSEMLA_PDL_WAIT=1), alone and with the combine
kernel letting the next kernel start once its programs have (its TRIGGER, SPARSEMLA_COMBINE_TRIGGER=1). Aimed at
bf16 T=1 H=128 (9.0 us, target 8), where the launches are a large share of the call.

1. Hazards: chains of calls where a torch kernel writes each call's q from the previous call's output right before
   the call (q[..., :512] = out, the rope columns kept), so a program that read q, or wrote the workspace the
   previous combine reads, before the kernels before it had finished would compute from stale data. Each chain runs
   eagerly and as one CUDA graph, for each variant; every output must be bitwise equal across all of them. The rows'
   entries do not merge in the kernel (FUSED), whose merge order, and so its rounding, may vary from run to run.
2. Timing: the small-T rows (and T=128 H=128 as a control, where the launch is a small share) for the three
   variants in rotated orders (CUDA-graph replay over rotating inputs: back-to-back calls, as in the suite), median
   us per call; each variant checked against the reference first.
Run on the GPU after `pip install .`:  python3 benchmarks/calls/pdl_wait.py [--rows bf16:1:128,...] [--no-time]
  [--check-rows ""] [--variants plain,wait]  (two variants: ABBA over six repetitions)
"""
import argparse

import torch

import sparsemla
import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import make_inputs
from sparsemla.gen.suite import suite_spec
from variant_rows import alternating, time_rows  # (the script's folder)

CHECK_ROWS = "bf16:1:128,bf16:4:64,fp8:1:128,fp8:4:128"
ROWS = "bf16:1:128,fp8:1:128,model1:1:128,bf16:1:64,bf16:4:128,bf16:16:128,bf16:128:128"
ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0), (1, 0, 2), (0, 2, 1))
LINKS = 8  # calls in a chain


def variant(wait: bool, trigger: bool) -> None:
    tb._PDL_WAIT, tb._COMBINE_TRIGGER = wait, trigger
    api.clear_call_cache()  # (a prepared launch keeps the kernels it was made with)


VARIANTS = {"plain": lambda: variant(False, False), "wait": lambda: variant(True, False),
            "wait+trigger": lambda: variant(True, True)}


def chain(kw: dict, graph: bool) -> list[torch.Tensor]:
    """The outputs of LINKS calls, each call's q written from the previous call's output."""
    q = kw["q"].clone()
    args = {k: v for k, v in kw.items() if k != "q"}
    outs = [torch.empty(*q.shape[:2], 512, dtype=q.dtype, device=q.device) for _ in range(LINKS)]

    def run():
        q.copy_(kw["q"])
        for k in range(LINKS):
            sparsemla.sparse_mla(q, out=outs[k], **args)
            q[..., :512].copy_(outs[k])  # a torch kernel right before the next call writes its q
    run()  # (eager; also prepares every launch before a capture)
    if graph:
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run()
        for o in outs:
            o.zero_()
        g.replay()
    torch.cuda.synchronize()
    return [o.clone() for o in outs]


def hazards(rows: str, dev) -> bool:
    ok_all = True
    for row in rows.split(","):
        fmt, T, H = row.split(":")
        kw = make_inputs(suite_spec(fmt, int(H), "sm90"), int(T), dev, slots=1 << 16, poison=False)
        kw["return_lse"] = False
        runs = {}
        for name, setup in VARIANTS.items():
            setup()
            for graph in (False, True):
                runs[(name, graph)] = chain(kw, graph)
        base = runs[("plain", False)]
        same = {k: all(torch.equal(a, b) for a, b in zip(base, v)) for k, v in runs.items()}
        finite = all(bool(torch.isfinite(o).all()) for v in runs.values() for o in v)
        ok = all(same.values()) and finite
        ok_all &= ok
        print(f"{row:12s} " + " ".join(f"{n}{' graph' if g else ''}: {'same' if s else 'DIFFERENT'}"
                                       for (n, g), s in same.items()) + f" {'ok' if ok else 'FAIL'}", flush=True)
    return ok_all


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-rows", default=CHECK_ROWS, help="format:T:H,... for the hazard chains")
    ap.add_argument("--rows", default=ROWS, help="format:T:H,... to time")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="which of " + ",".join(VARIANTS) + " to time")
    args = ap.parse_args()
    dev = torch.device("cuda")
    ok = hazards(args.check_rows, dev) if args.check_rows else True
    print("pdl_wait hazards:", "all ok" if ok else "FAILED", flush=True)
    if not args.no_time:
        timed = {name: VARIANTS[name] for name in args.variants.split(",")}
        orders = ORDERS if len(timed) == 3 else alternating(6)
        lines = time_rows(args.rows, timed, orders, dev)
        print("\n" + "\n".join(lines))
    variant(False, False)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
