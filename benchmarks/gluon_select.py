"""Issue 7, sessions 12-13: where the Gluon kernel (Config.gluon) beats the shipped entry of the H200
table, measured side by side in one process, write its entry into a table under OUT_DIR.

For every spec of the shipped table that the kernel runs (gen/gluon.py; with fewer than 64 heads it
masks the rest of its 64-row block) and each of its buckets: the shipped config and the Gluon kernel at
the shipped split count, half and double it, each timed and checked like a tuning trial
(gen.gpu_measure: CUDA-graph replay over rotating inputs, NaN in unreferenced slots); the fastest
correct one wins. A Gluon winner's entry gets
FlashInfer's do_bench time from the same process and the backend that is faster by do_bench, as
the tuner's entries do. Merge the result with benchmarks/merge_tuned.py.

  python3 benchmarks/gluon_select.py OUT_DIR [--remeasure] [--heads 16,32] [--formats model1,fp8_ds_mla]
  (on the GPU, after pip install .)

--remeasure: after a change to the Gluon template, only re-time (and re-check) the entries that
already run it, at their split count, and rewrite them with the new times. --heads, --formats: only the
specs with these head counts, KV formats (default: all). Winners are written as they are found, so a
run cut short keeps them.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from sparsemla.gen.gluon import unsupported
from sparsemla.gen.gpu_measure import GpuMeasurer
from sparsemla.gen.spec import Config, KernelSpec, config_label
from sparsemla.gen.tuned_table import (TunedEntry, device_provenance, gpu_dirname, load_tables,
                                       software_provenance, today, write_table)


def gluon_configs(shipped: Config) -> list[Config]:
    s = shipped.num_splits
    splits = sorted({s, max(1, s // 2), min(64, 2 * s)}) if s > 1 else [1]
    return [Config(64, 64, n, 8, 2, gluon=True) for n in splits]


def main(out_dir: str, remeasure: bool = False, heads: set[int] | None = None,
         formats: set[str] | None = None) -> int:
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
                    or (formats and spec.kv_format not in formats):
                continue
            for b, entry in sorted(buckets.items()):
                if remeasure and not entry.config.gluon:
                    continue
                base = measure(spec, entry.config, b)
                best, best_cfg, tried = base.time_us if base.ok else float("inf"), entry.config, 1
                line = f"{key} T={b}: shipped {config_label(entry.config)} {base.time_us:.1f} us"
                for cfg in ([] if remeasure else gluon_configs(entry.config)):
                    m = measure(spec, cfg, b)
                    tried += 1
                    line += f" | s{cfg.num_splits} gl {m.time_us:.1f}" + ("" if m.ok else f" ({m.reason})")
                    if m.ok and m.time_us < best:
                        best, best_cfg = m.time_us, cfg
                if best_cfg.gluon:
                    cmp = measure.compare(spec, best_cfg, b)
                    fi, ours = cmp.get("flashinfer_us"), cmp.get("triton_bench_us")
                    backend = "flashinfer" if fi is not None and ours is not None and fi < ours else "triton"
                    write_table(path, gpu, {key: {b: TunedEntry(best_cfg, b, backend, best, fi, tried, today(),
                                                                "tuned", ours, entry.default_time_us)}}, prov)
                    won += 1
                    line += f" -> {config_label(best_cfg)} (do_bench {ours}, FlashInfer {fi}: {backend})"
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
    a = ap.parse_args()
    sys.exit(main(a.out_dir, a.remeasure, {int(h) for h in a.heads.split(",") if h} or None,
                  {f for f in a.formats.split(",") if f} or None))
