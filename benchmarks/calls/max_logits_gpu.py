"""FlashMLA prefill's max_logits on the GPU: the generated kernel (runtime/max_logits.py) against the PyTorch pass it
replaces and the attention call itself, on prefill shapes (topk 2048 of 262,144 bf16 slots; slots no list names
hold 300s, which a read would show). Checks each config against the fp64 max over a sample of tokens, then times
them (do_bench median, us).
    python3 benchmarks/calls/max_logits_gpu.py [--out DIR]
"""
import argparse
import json
import os
import sys

import torch
import triton

import sparsemla
from sparsemla.gen.max_logits import MaxLogitsConfig, MaxLogitsSpec
from sparsemla.runtime.max_logits import sparse_max_logits, sparse_max_logits_reference

SHAPES = [(4096, 128, 576), (4096, 64, 576), (4096, 16, 576), (4096, 128, 512), (256, 16, 576)]
CONFIGS = [MaxLogitsConfig(h, n, w, s) for h, n, w, s in
           [(64, 32, 8, 2), (64, 64, 8, 2), (64, 16, 8, 3), (64, 32, 8, 3), (32, 32, 4, 2), (16, 32, 4, 2),
            (16, 64, 4, 3)]]


def problem(T, H, d, gen, slots=262144, topk=2048):
    q = torch.randn(T, H, d, generator=gen, device="cuda").bfloat16()
    idx = torch.randint(0, slots, (T, topk), generator=gen, device="cuda", dtype=torch.int32)
    idx[torch.rand(T, topk, generator=gen, device="cuda") < 0.05] = -1
    idx[3] = -1
    tlen = torch.randint(topk // 2, topk + 1, (T,), generator=gen, device="cuda", dtype=torch.int32)
    kv = torch.full((slots, d), 300.0, device="cuda", dtype=torch.bfloat16)  # a read of these shows (NaN would not)
    named = torch.unique(idx[idx >= 0].long())
    kv[named] = torch.randn(named.numel(), d, generator=gen, device="cuda").bfloat16()
    return q, kv, idx, tlen


def fp64_max(q, kv, idx, tlen, scale, tokens):
    out = []
    for t in tokens:
        sel = idx[t, :int(tlen[t])]
        sel = sel[sel >= 0].long()
        if sel.numel() == 0:
            out.append(torch.full((q.shape[1],), float("-inf"), dtype=torch.float64, device="cuda"))
        else:
            out.append((q[t].double() @ kv[sel].double().T * scale).amax(1))
    return torch.stack(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    print(f"{torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}", flush=True)
    for T, H, d in SHAPES:
        q, kv, idx, tlen = problem(T, H, d, gen)
        scale = d ** -0.5
        sample = [0, 1, 3, T // 2, T - 1]
        want = fp64_max(q, kv, idx, tlen, scale, sample)
        spec = MaxLogitsSpec(d, "bf16", "sm90")
        default = spec.default_config(H)
        attn_out = torch.empty(T, H, 512, device="cuda", dtype=torch.bfloat16)
        attn = triton.testing.do_bench(lambda: sparsemla.sparse_mla(q, kv, idx, sm_scale=scale, topk_length=tlen,
                                                                    out=attn_out, check_indices=False))
        ref = triton.testing.do_bench(lambda: sparse_max_logits_reference(q, kv, idx, scale, tlen))
        ref_err = (sparse_max_logits_reference(q, kv, idx, scale, tlen)[sample].double() - want).nan_to_num(0).abs().max()
        row = dict(T=T, H=H, d_qk=d, attention_us=attn * 1e3, torch_pass_us=ref * 1e3, torch_err=float(ref_err),
                   default=str(default), configs={})
        for cfg in [default] + [c for c in CONFIGS if c != default]:
            try:
                got = sparse_max_logits(q, kv, idx, scale, tlen, config=cfg)
                torch.cuda.synchronize()
                err = (got[sample].double() - want)
                err = float(err.nan_to_num(0, 0, 0).abs().max())
                ok = (bool(torch.equal(torch.isinf(got[sample]), torch.isinf(want))) and not got.isnan().any()
                      and err <= 1e-4 * max(1.0, float(want[torch.isfinite(want)].abs().max())))
                us = triton.testing.do_bench(lambda: sparse_max_logits(q, kv, idx, scale, tlen, config=cfg)) * 1e3
                row["configs"][str(cfg)] = dict(us=us, err=err, ok=ok)
            except Exception as e:  # a config that does not build is reported, not fatal
                row["configs"][str(cfg)] = dict(error=f"{type(e).__name__}: {str(e)[:200]}")
            print(T, H, d, cfg, row["configs"][str(cfg)], flush=True)
        rows.append(row)
        print(f"T={T} H={H} d={d}: attention {attn * 1e3:.1f} us, torch pass {ref * 1e3:.1f} us", flush=True)
        with open(os.path.join(args.out, "max_logits_gpu.json"), "w") as f:  # after each shape: a cut run keeps them
            json.dump(rows, f, indent=1)
        torch.cuda.empty_cache()
    print("| T | H | d_qk | attention us | torch pass us | kernel (default) us | best config | best us | max err |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        good = {k: v for k, v in r["configs"].items() if v.get("ok")}
        best = min(good, key=lambda k: good[k]["us"]) if good else None
        d = r["configs"].get(r["default"], {})
        print(f"| {r['T']} | {r['H']} | {r['d_qk']} | {r['attention_us']:.1f} | {r['torch_pass_us']:.1f} | "
              f"{d.get('us', float('nan')):.1f} | {best} | {good[best]['us'] if best else float('nan'):.1f} | "
              f"{max((v['err'] for v in good.values()), default=float('nan')):.2e} |")
    bad = [(r["T"], r["H"], k) for r in rows for k, v in r["configs"].items() if not v.get("ok")]
    print("not ok:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
