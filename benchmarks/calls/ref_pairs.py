"""Time the config each entry replaced against the entry where its tuning run did not time it.

  python3 benchmarks/calls/ref_pairs.py tuned/NVIDIA_H100_80GB_HBM3/sparse_mla.json [--out OUT.json]

For every entry of the table whose ``incumbent`` (the config the tables held when its study began, e.g.
the H200's) differs from its config and has no ``incumbent_time_us`` (never timed in the study: e.g. the
H200's 64-head Gluon programs for 32-head specs, outside the tuner's space before session 54), both
configs are checked and timed like tuning trials (gen.gpu_measure, one child process), alternating
A B A B; the median of each is printed with the speedup of the entry. On the GPU, after pip install.
"""
from __future__ import annotations

import argparse
import json
import statistics

from sparsemla.gen.gpu_measure import GpuMeasurer
from sparsemla.gen.spec import KernelSpec, config_label
from sparsemla.gen.tuned_table import parse_table


def pairs(table: dict):
    """(spec, T, incumbent, entry's config) where they differ and the study did not time the incumbent."""
    for key, buckets in sorted(parse_table(table).items()):
        for bucket, e in sorted(buckets.items()):
            if e.incumbent is not None and e.incumbent != e.config and e.incumbent_time_us is None:
                yield KernelSpec.from_key(key), bucket, e.incumbent, e.config


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="a GPU's own tuned table, its entries naming their incumbents")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    measure, rows = GpuMeasurer(timeout=120), []
    for spec, T, rc, oc in pairs(json.load(open(args.table))):
        times = {"ref": [], "own": []}
        for _ in range(args.rounds):
            for name, cfg in (("ref", rc), ("own", oc)):
                m = measure(spec, cfg, T)
                times[name].append(m.time_us if m.ok else float("inf"))
                if not m.ok:
                    print(f"{spec.key} T={T} {config_label(cfg)}: {m.reason}", flush=True)
        r, o = (statistics.median(times[k]) for k in ("ref", "own"))
        rows.append(dict(spec=spec.key, bucket=T, ref=config_label(rc), ref_us=r, own=config_label(oc), own_us=o))
        print(f"{spec.key} T={T}: reference {config_label(rc)} {r:.2f} us, own {config_label(oc)} {o:.2f} us, "
              f"speedup {r / o:.3f}", flush=True)
    measure.close()
    if args.out:
        json.dump(rows, open(args.out, "w"), indent=1)
    print("\n| spec | T | reference | us | own | us | speedup |\n|---|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x['spec'].replace('sparse_mla-sm90-', '')} | {x['bucket']} | {x['ref']} | {x['ref_us']:.2f} | "
              f"{x['own']} | {x['own_us']:.2f} | {x['ref_us'] / x['own_us']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
