"""Issue 7, sessions 12-13: where the Gluon kernel (Config.gluon) beats the shipped entry of the H200
table, measured side by side in one process, write its entry into a table under OUT_DIR.

For every spec of the shipped table that the kernel runs (gen/gluon.py; with fewer than 64 heads it
masks the rest of its 64-row block) and each of its buckets: the shipped config and the Gluon kernel at
the shipped split count, half and double it, each timed and checked like a tuning trial
(gen.gpu_measure: CUDA-graph replay over rotating inputs, NaN in unreferenced slots); the fastest
correct one wins. A Gluon winner's entry gets
FlashInfer's do_bench time from the same process and the backend that is faster by do_bench, as
the tuner's entries do. Merge the result with benchmarks/merge_tuned.py.

  python3 benchmarks/gluon_select.py OUT_DIR [--remeasure | --narrow [--one-stage]] [--heads 16,32]
                                      [--formats model1,fp8_ds_mla] [--tokens 128,256]
  (on the GPU, after pip install .)

--remeasure: after a change to the Gluon template, only re-time (and re-check) the entries that
already run it, at their split count, and rewrite them with the new times. --narrow (session 14): the
candidates are the narrow Gluon kernel (heads as wgmma's N, 16 or 32 per program; 32 heads also as
two 16-head programs with a bf16 cache) at the shipped split count, half and double it (and 1 from 64
tokens up), with one loading warp group and, for fp8 caches, two; 16-head programs also with one
stage, two programs per SM (session 16; --one-stage: only those). Specs with more than 32 heads get
narrow programs at T=1 only: 16 heads with 8, 16 or 32 splits (session 16), with one stage 16 or 32,
and 32 heads with 16 or 32 splits (session 18).
--heads, --formats, --tokens: only the specs with these head counts, KV formats (or key parts, such as
fp8_e4m3-qk576), and the buckets of these token counts (default: all). A token count of --tokens that a
spec has no bucket for gets one (not with --remeasure): the entry of the bucket that serves it now is the
shipped config there, and the candidates are its neighbours (session 18: bf16 NoPE T=32 H=128 ran the
T=16 entry's 4 splits, 0.84x FlashInfer). Winners are written as they
are found, so a run cut short keeps them.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from sparsemla.gen.gluon import unsupported
from sparsemla.gen.gpu_measure import GpuMeasurer
from sparsemla.gen.spec import Config, KernelSpec, config_label
from sparsemla.gen.tuned_table import (TunedEntry, bucket_for, device_provenance, gpu_dirname, load_tables,
                                       software_provenance, today, write_table)


def _splits(shipped: Config) -> list[int]:
    s = shipped.num_splits
    return sorted({s, max(1, s // 2), min(64, 2 * s)})


def gluon_configs(shipped: Config) -> list[Config]:
    return [Config(64, 64, n, 8, 2, gluon=True) for n in (_splits(shipped) if shipped.num_splits > 1 else [1])]


def narrow_configs(spec: KernelSpec, shipped: Config, tokens: int, one_stage_only: bool = False) -> list[Config]:
    if spec.num_heads > 32:
        # At T=1, 16-head programs write a quarter of the wide kernel's partials (session 16: bf16
        # H=128 12.1 us with 16 splits against 14.4 us); with one stage two share an SM (session 17)
        if tokens != 1:
            return []
        one = [Config(16, 64, n, 8, 1, gluon=True) for n in (16, 32)]
        # 32-head programs too (session 18, not yet measured): a wgmma with 32 heads as N reads shared
        # memory for twice the work of one with 16, and each tile is gathered by half as many programs;
        # with 32 splits a program has one tile (a 16-head program at 16 splits spends 4.7K of its 10.7K
        # cycles on its two tiles)
        wide_n = [Config(32, 64, n, 8, 2, gluon=True) for n in (16, 32)]
        return one if one_stage_only else [Config(16, 64, n, 8, 2, gluon=True) for n in (8, 16, 32)] + one + wide_n
    # 32 heads also as two 16-head programs with a bf16 cache (fp8 tries its two loader counts instead)
    bf16 = spec.kv_format == "auto"
    block_hs = (16,) if spec.num_heads <= 16 else (32, 16) if bf16 else (32,)
    warps = (8,) if bf16 else (8, 12)
    # (from 64 tokens up, unsplit lists fill most of the GPU: session 14's T=128 and 256 winners)
    splits = sorted(set(_splits(shipped)) | ({1} if tokens >= 64 else set()))
    # 16 heads also with one stage, two programs per SM (session 16)
    one_stage = [Config(16, 64, n, 8, 1, gluon=True) for n in splits if 16 in block_hs]
    if one_stage_only:
        return one_stage
    return [Config(bh, 64, n, w, 2, gluon=True) for bh in block_hs for w in warps for n in splits] + one_stage


def main(out_dir: str, remeasure: bool = False, heads: set[int] | None = None,
         formats: set[str] | None = None, narrow: bool = False, tokens: set[int] | None = None,
         one_stage_only: bool = False) -> int:
    dev = torch.device("cuda")
    gpu = gpu_dirname(torch.cuda.get_device_name(dev))
    path = Path(out_dir) / gpu / "sparse_mla.json"
    prov = {**device_provenance(dev), **software_provenance()}
    measure = GpuMeasurer(120.0)
    won = 0
    try:
        for key, buckets in sorted(load_tables(gpu).items()):
            spec = KernelSpec.from_key(key)
            if unsupported(spec) or (heads and spec.num_heads not in heads) \
                    or (formats and not any(f == spec.kv_format or f in key for f in formats)):
                continue
            served = {} if remeasure or not tokens else \
                {t: buckets[bucket_for(t, sorted(buckets))] for t in tokens if t not in buckets}
            for b, entry in sorted({**buckets, **served}.items()):
                if (remeasure and not entry.config.gluon) or (tokens and b not in tokens):
                    continue
                base = measure(spec, entry.config, b)
                best, best_cfg, tried = base.time_us if base.ok else float("inf"), entry.config, 1
                line = f"{key} T={b}: shipped {config_label(entry.config)} {base.time_us:.1f} us"
                candidates = [] if remeasure else narrow_configs(spec, entry.config, b, one_stage_only) if narrow \
                    else gluon_configs(entry.config)
                for cfg in candidates:
                    m = measure(spec, cfg, b)
                    tried += 1
                    name = f"s{cfg.num_splits} gl" if cfg.block_h == 64 else config_label(cfg).replace(" n64", "")
                    line += f" | {name} {m.time_us:.1f}" + ("" if m.ok else f" ({m.reason})")
                    if m.ok and m.time_us < best:
                        best, best_cfg = m.time_us, cfg
                if best_cfg.gluon:
                    cmp = measure.compare(spec, best_cfg, b)
                    fi, ours = cmp.get("flashinfer_us"), cmp.get("triton_bench_us")
                    backend = "flashinfer" if fi is not None and ours is not None and fi < ours else "triton"
                    write_table(path, gpu, {key: {b: TunedEntry(best_cfg, b, backend, best, fi, tried, today(), "tuned",
                                                                ours, None if b in served else entry.default_time_us)}},
                                prov)
                    won += 1
                    line += f" -> {config_label(best_cfg)} (do_bench {ours}, FlashInfer {fi}: {backend})"
                elif b in served:  # a new bucket: the config that served it, now measured there
                    write_table(path, gpu, {key: {b: TunedEntry(best_cfg, b, entry.backend, best, None, tried, today(),
                                                                "tuned")}}, prov)
                    won += 1
                    line += f" -> new bucket, {config_label(best_cfg)} as served before"
                else:
                    line += " -> shipped kept"
                print(line, flush=True)
    finally:
        measure.close()
    print(f"{won} entries written to {path}" if won else "no Gluon winner", flush=True)
    return 0


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--remeasure", action="store_true")
    ap.add_argument("--heads", default="", help="comma-separated head counts (default: all)")
    ap.add_argument("--formats", default="", help="comma-separated kv formats (default: all)")
    ap.add_argument("--narrow", action="store_true", help="try the narrow Gluon kernel (<= 32 heads)")
    ap.add_argument("--tokens", default="", help="comma-separated bucket token counts (default: all)")
    ap.add_argument("--one-stage", action="store_true", help="with --narrow: only the one-stage candidates")
    a = ap.parse_args()
    sys.exit(main(a.out_dir, a.remeasure, {int(h) for h in a.heads.split(",") if h} or None,
                  {f for f in a.formats.split(",") if f} or None, a.narrow,
                  {int(t) for t in a.tokens.split(",") if t} or None, a.one_stage))
