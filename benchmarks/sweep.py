"""Time several configs per row on the GPU, with a bf16 correctness check and the compiler's
resource report (registers, spills, shared memory) of each variant.

  python benchmarks/sweep.py --rows bf16:1:128,bf16:128:128 --configs 64,32,1,8,2/64,64,1,8,2/64,32,1,8,3,1
  (a config is block_h,block_n,num_splits,num_warps,num_stages; splits 0 = the default's)
"""
from __future__ import annotations

import argparse
import json
import os

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True, help="format:T:H,...")
    ap.add_argument("--configs", required=True, help="h,n,s,w,st[,pf[,px[,l2]]]/... (pf 1: index_prefetch, px 1: p_exchange, l2: l2_prefetch tiles)")
    ap.add_argument("--pool", type=int, default=None,
                    help="draw the indices from the first POOL slots only (an L2-resident working set: "
                         "how fast the kernel runs when the gather never waits on HBM)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    from triton.testing import do_bench

    import sparsemla
    from sparsemla.bench import FORMATS, SLOTS, TOPK, make_cache, rel_err, roofline_us
    from sparsemla.gen.search_space import compiled_variant
    from sparsemla.gen.spec import Config, KernelSpec, config_label, default_config

    dev = torch.device("cuda")
    configs = [tuple(int(x) for x in c.split(",")) for c in args.configs.split("/")]
    results = []
    caches, reports = {}, {}
    for row in args.rows.split(","):
        fname, T, H = row.split(":")
        T, H = int(T), int(H)
        fmt = FORMATS[fname]
        if fname not in caches:
            caches.clear()
            torch.cuda.empty_cache()
            caches[fname] = make_cache(fmt, dev)
        cache, kw = caches[fname]
        q = torch.randn(T, H, fmt.d_qk, device=dev, dtype=torch.bfloat16)
        idx = torch.randint(0, args.pool or SLOTS, (T, TOPK), device=dev, dtype=torch.int32)
        out = torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)
        spec = KernelSpec(kv_format=fmt.kv_format, d_qk=fmt.d_qk, num_heads=H, topk=TOPK,
                          page_size=fmt.page_size or 1)
        n = min(T, 4)
        ref = sparsemla.sparse_mla(q[:n], cache, idx[:n], sm_scale=fmt.d_qk ** -0.5, kv_format=fmt.kv_format,
                                   backend="torch", **kw)
        floor, _, _ = roofline_us(fmt, T, H, 4300, 790)
        for h, nb, s, w, st, *flags in configs:
            if s == 0:
                s = default_config(spec, T).num_splits
            pf, px, l2 = (list(flags) + [0, 0, 0])[:3]
            cfg = Config(min(h, max(16, 1 << (H - 1).bit_length())), nb, s, w, st, bool(pf), bool(px), l2)
            r = dict(row=row, config=cfg.to_dict())
            try:
                call = lambda: sparsemla.sparse_mla(q, cache, idx, sm_scale=fmt.d_qk ** -0.5,
                                                    kv_format=fmt.kv_format, out=out, backend="triton",
                                                    config=cfg, **kw)
                from sparsemla.runtime import triton_backend
                triton_backend.last_compiled = None  # set again only when this call compiles
                call()
                torch.cuda.synchronize()
                r["err"] = rel_err(out[:n], ref)
                r["us"] = do_bench(call, warmup=5, rep=30, return_mode="median") * 1e3
                r["roofline"] = floor / r["us"]
                c, variant = triton_backend.last_compiled, (spec.key, compiled_variant(cfg))
                if c is not None:
                    reports[variant] = dict(regs=c.n_regs, spills=c.n_spills, smem=c.metadata.shared)
                r.update(reports.get(variant, {}))  # a variant met before is not compiled again
            except Exception as e:
                r["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            results.append(r)
            print(f"{row:18s} {config_label(cfg)}: {r.get('us', float('nan')):9.1f} us "
                  f"roof {r.get('roofline', 0):.2f} err {r.get('err', float('nan')):.1e} "
                  f"regs {r.get('regs', '-')} spill {r.get('spills', '-')} smem {r.get('smem', '-')} {r.get('error', '')}",
                  flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"sweep{'_pool%d' % args.pool if args.pool else ''}.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
