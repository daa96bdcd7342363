"""Issue 7 experiment (prepared in session 30 without a GPU): hazards of GluonKernel.pdl_wait
(SPARSEMLA_PDL_WAIT=1), the Gluon attention kernel launched as a programmatic dependent of the stream's previous
kernel and waiting for it before it touches memory.

A chain of calls where each call's q is written by a torch kernel from the previous call's output, right before the
call, so a program that read q (or the indices, or wrote the workspace) before the previous kernels had finished
would compute from stale data: q_{k+1}[..., :512] = out_k, the rope columns kept. The chain runs eagerly and as one
CUDA graph, with the wait off and on (toggled in this process; the configs are the runtime's), and every output of
the chain must be bitwise equal across the four runs. Rows: the small-T rows the wait is for (T = 1, 4; H = 64,
128; bf16 and fp8_e4m3), where the launch is a large share of the call; none of their entries merges in the kernel
(FUSED), whose merge order, and so its rounding, may vary from run to run.
Run on the GPU after `pip install .`:  python3 benchmarks/calls/pdl_wait_check.py [--rows bf16:1:128,...]
"""
import argparse

import torch

import sparsemla
import sparsemla.runtime.api as api
import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gpu_measure import make_inputs
from sparsemla.gen.suite import suite_spec

ROWS = "bf16:1:128,bf16:4:64,fp8:1:128,fp8:4:128"
LINKS = 8  # calls in a chain


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default=ROWS, help="format:T:H,...")
    args = ap.parse_args()
    dev = torch.device("cuda")
    ok_all = True
    for row in args.rows.split(","):
        fmt, T, H = row.split(":")
        spec = suite_spec(fmt, int(H), "sm90")
        kw = make_inputs(spec, int(T), dev, slots=1 << 16, poison=False)
        kw["return_lse"] = False
        runs = {}
        for wait in (False, True):
            tb._PDL_WAIT = wait
            api.clear_call_cache()  # (a prepared launch keeps the kernel it was made with)
            for graph in (False, True):
                runs[(wait, graph)] = chain(kw, graph)
        base = runs[(False, False)]
        same = {k: all(torch.equal(a, b) for a, b in zip(base, v)) for k, v in runs.items()}
        finite = all(bool(torch.isfinite(o).all()) for v in runs.values() for o in v)
        ok = all(same.values()) and finite
        ok_all &= ok
        print(f"{row:12s} " + " ".join(f"wait={int(w)} graph={int(g)}: {'same' if s else 'DIFFERENT'}"
                                       for (w, g), s in same.items()) + f" {'ok' if ok else 'FAIL'}", flush=True)
    tb._PDL_WAIT = False
    api.clear_call_cache()
    print("pdl_wait hazards:", "all ok" if ok_all else "FAILED")
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
