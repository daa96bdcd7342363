"""Issue 7 experiment (session 12): Gluon sm90 bf16 prototypes on the H200 (gluon_split.py, FlashInfer's
split with a clock64 profile; session 12's first prototypes, gluon_kernel.py and gluon_ws.py, and
gluon_n32.py, timed in session 16 and removed, are in git history: benchmarks/calls/README.md).

1. Correctness of every variant against the fp32 reference: unreferenced slots NaN, -1 and
   out-of-range slots, topk_length (one row 0), +/-inf sinks, LSE, a non-contiguous q, and the
   split-K partials merged in torch.
2. Kernel time by CUDA-graph replay over rotating inputs (pkg/bench.py's method) for the big-T
   rows, beside the shipped Triton kernel (sparse_mla, tuned config) and FlashInfer's FA3.
Run on the GPU after `pip install .`: python3 benchmarks/calls/proto_gluon.py [--profile]
(--profile: call 8's per-warp-group clock64 profile of gluon_split.py at T=128)
"""
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gluon_split as gsp  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.gen.gpu_measure import rel_err  # noqa: E402
from sparsemla.bench import FlashInferAnchor, FORMATS, graph_time_us, rotations  # noqa: E402

DEV = torch.device("cuda")
TOPK = 2048
VARIANTS = {  # name: ("split", registers of group A, whole-tile gather, L2 prefetch of tile j+2) for
    # gluon_split.py. The "triton" column is sparse_mla through the installed table (the Gluon template
    # for these rows since session 12).
    "split": ("split", 232, False, False),
}
PHASES = {0: "A wait free", 1: "A free+gather", 2: "A wait P", 3: "A P.V", 8: "B wait ready", 9: "B S",
          10: "B softmax", 11: "B P out", 12: "B P.V+free"}


def launch(variant, q, kv, idx, sm_scale, *, topk_len=None, sink=None, out=None, lse=None, splits=1, prof=None):
    kind = VARIANTS[variant] if isinstance(variant, str) else variant  # a name, or a kind itself
    T, H, d_qk = q.shape
    dummy = torch.empty(1, device=DEV, dtype=torch.float32)
    if out is None:
        out = torch.empty(T, H, 512, device=DEV, dtype=torch.bfloat16)
    o_part = lse_part = dummy
    if splits > 1:
        o_part = torch.empty(T, H, splits, 512, device=DEV, dtype=torch.float32)
        lse_part = torch.empty(T, H, splits, device=DEV, dtype=torch.float32)
    grid = (T * splits * (H // 64),)
    if kind[0] == "split":
        gsp.sparse_mla_sm90_split_bf16[grid](
            q, q.stride(0), q.stride(1), kv, kv.stride(0), kv.shape[0], idx, idx.stride(0),
            topk_len if topk_len is not None else idx, sink if sink is not None else dummy,
            out, out.stride(0), out.stride(1), lse if lse is not None else dummy,
            lse.stride(0) if lse is not None else 0, o_part, lse_part, prof if prof is not None else dummy,
            sm_scale, H, splits, TOPK=idx.shape[1], HAS_TOPK_LEN=topk_len is not None, HAS_SINK=sink is not None,
            RETURN_LSE=lse is not None, SPLIT_K=splits > 1, A_REGS=kind[1], WHOLE=kind[2], L2PF=kind[3], DVA=256,
            PROFILE=prof is not None, num_warps=4)
    if splits > 1:
        m = lse_part.amax(-1, keepdim=True)
        m = torch.where(m == -math.inf, 0.0, m)
        w = torch.exp2(lse_part - m)
        tot = w.sum(-1, keepdim=True)
        o = (o_part * (w / torch.where(tot > 0, tot, 1.0))[..., None]).sum(-2)
        out.copy_(o.to(out.dtype))
    return out


def check(log):
    ok = True
    for d_qk in (576,):  # the Gluon prototypes need the rope columns
        for H in (64, 128):
            T, slots = 6, 40000
            g = torch.Generator(device=DEV).manual_seed(d_qk + H)
            kv = torch.randn(slots, d_qk, device=DEV, generator=g).to(torch.bfloat16)
            idx = torch.randint(0, slots, (T, TOPK), device=DEV, generator=g, dtype=torch.int32)
            idx[:, ::7] = -1
            idx[1, 5:40] = slots + 3  # past the cache: skipped
            used = torch.zeros(slots, dtype=torch.bool, device=DEV)
            used[idx[(idx >= 0) & (idx < slots)].long()] = True
            kv[~used] = float("nan")
            big = torch.randn(T, H, d_qk + 64, device=DEV, generator=g).to(torch.bfloat16)
            q = big[..., :d_qk]  # non-contiguous rows
            topk_len = torch.randint(1, TOPK + 1, (T,), device=DEV, generator=g, dtype=torch.int32)
            topk_len[2] = 0
            topk_len[3] = 37
            sink = torch.randn(H, device=DEV, generator=g)
            sink[0], sink[1] = float("inf"), float("-inf")
            sm = d_qk ** -0.5
            ref, ref_lse = sparsemla.sparse_mla(q, kv, idx, sm_scale=sm, topk_length=topk_len, attn_sink=sink,
                                                return_lse=True, backend="torch")
            ref_ns = sparsemla.sparse_mla(q, kv, idx, sm_scale=sm, topk_length=topk_len, backend="torch")
            for name in VARIANTS:
                try:
                    lse = torch.empty(T, H, device=DEV)
                    o = launch(name, q, kv, idx, sm, topk_len=topk_len, sink=sink, lse=lse)
                    o4 = launch(name, q, kv, idx, sm, topk_len=topk_len, splits=3)
                    torch.cuda.synchronize()
                    e1, e2 = rel_err(o, ref), rel_err(o4, ref_ns)
                    fin = torch.isfinite(ref_lse)
                    e3 = (lse[fin] - ref_lse[fin]).abs().max().item() if fin.any() else 0.0
                    inf_ok = bool((lse[~fin] == math.inf).all())
                    good = e1 < 8e-3 and e2 < 8e-3 and e3 < 1e-2 and inf_ok and bool(torch.isfinite(o).all())
                    ok &= good
                    log(f"check d_qk={d_qk} H={H} {name}: out {e1:.1e} split3 {e2:.1e} lse {e3:.1e} "
                        f"inf_ok {inf_ok} {'ok' if good else 'FAIL'}")
                except Exception as e:
                    ok = False
                    log(f"check d_qk={d_qk} H={H} {name}: ERROR {type(e).__name__}: {str(e)[:500]}")
    return ok


def bench(rows, log, profile=False):
    anchor = FlashInferAnchor(DEV)
    fmt = FORMATS["bf16"]
    slots = 262144
    kv = torch.randn(slots, 576, device=DEV).to(torch.bfloat16)
    table = []
    for T, H in rows:
        g = torch.Generator(device=DEV).manual_seed(T * 1000 + H)
        sets = [(torch.randn(T, H, 576, device=DEV, dtype=torch.bfloat16, generator=g),
                 torch.randint(0, slots, (T, TOPK), device=DEV, dtype=torch.int32, generator=g),
                 torch.empty(T, H, 512, device=DEV, dtype=torch.bfloat16)) for _ in range(rotations(fmt, T))]
        sm = 576 ** -0.5
        res = {"T": T, "H": H}
        try:
            res["triton"] = graph_time_us([
                (lambda st=st: sparsemla.sparse_mla(st[0], kv, st[1], sm_scale=sm, out=st[2], backend="triton"))
                for st in sets])
        except Exception as e:
            log(f"T={T} H={H} triton: {type(e).__name__}: {e}")
        try:
            prepared = [anchor.prepare(fmt, kv, {}, st[0], st[1], sm) for st in sets]
            res["flashinfer"] = graph_time_us([p[0] for p in prepared])
            del prepared
        except Exception as e:
            log(f"T={T} H={H} flashinfer: {type(e).__name__}: {e}")
        ref = sparsemla.sparse_mla(sets[0][0][:4], kv, sets[0][1][:4], sm_scale=sm, backend="torch")
        for name in VARIANTS:
            try:
                launch(name, sets[0][0], kv, sets[0][1], sm, out=sets[0][2])
                torch.cuda.synchronize()
                err = rel_err(sets[0][2][:4], ref)
                res[name] = graph_time_us([
                    (lambda st=st: launch(name, st[0], kv, st[1], sm, out=st[2])) for st in sets])
                res[name + " err"] = err
            except Exception as e:
                log(f"T={T} H={H} {name}: {type(e).__name__}: {str(e)[:300]}")
        if profile and T == 128:
            # (call 8) per-phase clock64 cycles per tile of each warp group of gluon_split.py (one
            # thread's view, averaged over programs); profiling itself costs a little.
            prof = torch.zeros(T * (H // 64), 16, dtype=torch.int64, device=DEV)
            launch(("split", 232, False, False), sets[0][0], kv, sets[0][1], sm, out=sets[0][2], prof=prof)
            torch.cuda.synchronize()
            per_tile = prof.double().mean(0) / (TOPK // 64)
            log(f"profile T={T} H={H} split: " + ", ".join(f"{n} {per_tile[k].item():.0f}" for k, n in PHASES.items())
                + " cycles/tile")
        flops = 2.0 * T * H * TOPK * (576 + 512)
        log(f"T={T} H={H}: " + ", ".join(f"{k} {v:.1f}" for k, v in res.items()
                                          if k not in ("T", "H") and not k.endswith("err")))
        res["tflops_per_us"] = flops / 1e6
        table.append(res)
        del sets
    return table


def main():
    logf = open(os.path.join(os.environ.get("OUT", "/tmp"), "proto_gluon.log"), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()
    t0 = time.time()
    ok = check(log)
    log(f"== correctness {'ok' if ok else 'FAILED'} ({time.time() - t0:.0f} s)")
    rows = [(128, 128), (64, 128), (256, 128), (128, 64), (256, 64), (4096, 128)]
    table = bench(rows, log, profile="--profile" in sys.argv)
    names = ["triton", "flashinfer"] + list(VARIANTS)  # "triton": sparse_mla through the installed table
    log("\n| T | H | " + " | ".join(names) + " | best gluon TFLOP/s |")
    log("|---" * (len(names) + 3) + "|")
    for r in table:
        best = min((r[n] for n in VARIANTS if n in r), default=float("nan"))
        log(f"| {r['T']} | {r['H']} | " + " | ".join(f"{r[n]:.1f}" if n in r else "-" for n in names)
            + f" | {r['tflops_per_us'] / best:.0f} |")


if __name__ == "__main__":
    main()
