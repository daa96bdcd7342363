"""GluonKernel.raw through the runtime (session 42): the same narrow Gluon config with an fp8_e4m3 cache and 16 heads
a program, run as the raw-row kernel (runtime/triton_backend.raw_for, SPARSEMLA_RAW_FP8's default) and as the
dequantizing one, in one process, alternating: CUDA-graph times on the suite's slot pool and on one that stays in L2,
and both outputs against the PyTorch reference. The rows: --tokens with 16 heads (each config as the H200 table holds
it where that is a 16-head Gluon one: one split at T >= 128; else block_h 16, one split, one stage), and T=256 with 32
heads (two 16-head programs a token) unless --no-h32. Below T=128 the table's entries split 2-32 ways, which the raw
kernel took only at commit 621f5db (session 42's call 15: slower there, 0.50-1.00x; measured and removed): at
HEAD those rows run the dequantizing kernel both times. --formats: the suite's fp8_e4m3 formats by default; fp8_ds_mla
(session 43's raw kernel for it) takes its page size from the suite (64).
  python3 benchmarks/calls/raw_rows.py [--tokens 128,256] [--no-h32] [--formats fp8,fp8_nope,fp8_ds_mla]
"""
import argparse
import sys

import torch

import sparsemla
import sparsemla.runtime.triton_backend as tb
from sparsemla.runtime import release_buffers
from sparsemla.bench import FORMATS, graph_time_us, make_cache
from sparsemla.gen.spec import Config
from sparsemla.gen.suite import SLOTS


def table_config(fmt, T, H) -> Config:
    """The H200 table's config for the row if it is a 16-head Gluon one, else block_h 16, one split, one stage (two
    programs an SM, as the table's T=256 entries)."""
    from sparsemla.gen.spec import KernelSpec
    from sparsemla.gen.tuned_table import package_dir, read_table
    entries, _ = read_table(package_dir() / "NVIDIA_H200" / "sparse_mla.json", check_provenance=False)
    entry = entries.get(KernelSpec(kv_format=fmt.kv_format, d_qk=fmt.d_qk, num_heads=H, arch="sm90",
                                   page_size=fmt.page_size or 1).key, {}).get(T)
    if entry and entry.config.gluon and entry.config.block_h == 16:
        return entry.config
    return Config(16, 64, 1, 8, 1, gluon=True)


def spread_scales(cache) -> None:
    """An fp8_ds_mla cache's scales, each row's 4, times 2^k with k uniform in -8..8 (in place): a tile's keys then
    differ in scale by up to 2^16 in each group, as the raw kernel's running max per group must handle (make_cache's
    rows are all N(0, 1), their scales alike)."""
    from sparsemla.gen.layout import DS_MLA_ROW_BYTES, DS_MLA_SCALE_OFF
    scales = cache.view(torch.uint8).reshape(-1, DS_MLA_ROW_BYTES)[:, DS_MLA_SCALE_OFF:DS_MLA_SCALE_OFF + 16]
    scales = scales.view(torch.float32)
    g = torch.Generator(device=cache.device).manual_seed(7)
    scales.mul_(torch.exp2(torch.randint(-8, 9, scales.shape, device=cache.device, generator=g).float()))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="128,256")
    ap.add_argument("--l2-slots", type=int, default=16384)
    ap.add_argument("--no-h32", action="store_true", help="without the T=256 H=32 rows")
    ap.add_argument("--formats", default="fp8,fp8_nope", help="the suite's formats (fp8_e4m3 or fp8_ds_mla)")
    args = ap.parse_args()
    dev = torch.device("cuda")
    names = args.formats.split(",")
    rows = [(name, T, 16) for name in names for T in map(int, args.tokens.split(","))]
    rows += [] if args.no_h32 else [(name, 256, 32) for name in names]
    ok_all = True
    out_rows = []
    caches = {name: make_cache(FORMATS[name], dev) for name in names}
    for name in names:
        if FORMATS[name].kv_format == "fp8_ds_mla":
            spread_scales(caches[name][0])
    for name, T, H in rows:
        fmt = FORMATS[name]
        cache, kw = caches[name]
        cfg = table_config(fmt, T, H)
        sm = fmt.d_qk ** -0.5

        def run(q, idx, out, raw):
            tb._RAW_FP8 = raw
            return sparsemla.sparse_mla(q, cache, idx, sm_scale=sm, kv_format=fmt.kv_format, out=out, config=cfg,
                                        **kw)

        # correctness first: both kernels against the reference, one input set
        g = torch.Generator(device=dev).manual_seed(T + H)
        idx = torch.randint(0, SLOTS, (T, 2048), device=dev, generator=g, dtype=torch.int32)
        idx[idx % 9 == 0] = -1
        q = torch.randn(T, H, fmt.d_qk, device=dev, generator=g).bfloat16()
        ref = sparsemla.sparse_mla(q, cache, idx, sm_scale=sm, kv_format=fmt.kv_format, backend="torch", **kw).float()
        errs = {}
        for raw in (True, False):
            release_buffers()  # (each launch rebuilt under the rule it is timed with)
            out = torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)
            run(q, idx, out, raw)
            errs[raw] = ((out.float() - ref).norm() / ref.norm()).item()
        good = all(e < 8e-3 for e in errs.values())
        ok_all &= good
        for pool in (SLOTS, args.l2_slots):
            sets = []
            for r in range(4):
                g = torch.Generator(device=dev).manual_seed(100 + r)
                sets.append((torch.randn(T, H, fmt.d_qk, device=dev, generator=g).bfloat16(),
                             torch.randint(0, pool, (T, 2048), device=dev, generator=g, dtype=torch.int32),
                             torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)))
            times = {True: [], False: []}
            for rep in range(4):  # alternating orders
                for raw in ((True, False) if rep % 2 == 0 else (False, True)):
                    release_buffers()
                    times[raw].append(graph_time_us([lambda s=s, raw=raw: run(*s, raw) for s in sets]))
            t_raw, t_c = sorted(times[True])[2], sorted(times[False])[2]
            out_rows.append((name, T, H, cfg, pool, t_c, t_raw, errs))
            print(f"{name} T={T} H={H} pool {pool}: dequantizing {t_c:.1f} us, raw {t_raw:.1f} us "
                  f"({t_c / t_raw:.3f}x); rel err {errs[False]:.2e} / {errs[True]:.2e} -> {'ok' if good else 'FAIL'}",
                  flush=True)
    tb._RAW_FP8 = True
    print(f"\n{torch.cuda.get_device_name()}\n| format | T | H | config | slot pool | dequantizing (us) | raw (us) | "
          f"speedup | rel err (deq / raw) |\n|---|---|---|---|---|---|---|---|---|")
    for name, T, H, cfg, pool, t_c, t_raw, errs in out_rows:
        print(f"| {name} | {T} | {H} | h{cfg.block_h} s{cfg.num_splits} w{cfg.num_warps} st{cfg.num_stages} | {pool} | "
              f"{t_c:.1f} | {t_raw:.1f} | {t_c / t_raw:.3f} | {errs[False]:.2e} / {errs[True]:.2e} |")
    print("correctness:", "ok" if ok_all else "FAIL")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
