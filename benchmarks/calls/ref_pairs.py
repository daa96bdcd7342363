"""Time the reference part's config against a GPU's own entry where its tuning run did not time it.

  python3 benchmarks/calls/ref_pairs.py tuned/NVIDIA_H200/sparse_mla.json OWN.json RUN_LOG... [--out OUT.json]

For every (spec, bucket) of OWN.json whose config differs from the reference table's and whose
reference config the run's logs (``benchmarks/own_vs_reference.py`` reads them) never timed (e.g. the
H200's 64-head Gluon programs for 32-head specs, outside the tuner's space before session 54), both
configs are checked and timed like tuning trials (gen.gpu_measure, one child process), alternating
A B A B; the median of each is printed with the speedup of the own entry. On the GPU, after pip install.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from sparsemla.gen.gpu_measure import GpuMeasurer
from sparsemla.gen.spec import Config, KernelSpec, config_label

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/, for its log reader
from own_vs_reference import read_log  # noqa: E402


def pairs(ref: dict, own: dict, timed: dict):
    """(spec, T, reference config, own config) where they differ and ``timed[(key, T)]`` (config labels
    to times, from the run's logs) lacks the reference config."""
    for key, buckets in sorted(own["entries"].items()):
        for bucket, e in sorted(buckets.items(), key=lambda kv: int(kv[0])):
            r = ref["entries"].get(key, {}).get(bucket)
            if not r or r["config"] == e["config"]:
                continue
            rc = Config.from_dict(r["config"])
            if config_label(rc) not in timed.get((key, int(bucket)), {}):
                yield KernelSpec.from_key(key), int(bucket), rc, Config.from_dict(e["config"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reference")
    ap.add_argument("own")
    ap.add_argument("logs", nargs="+", help="the tuning run's logs (tune_*.log[.gz])")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ref, own = (json.load(open(p)) for p in (args.reference, args.own))
    timed = {}
    for path in args.logs:
        for study, labels in read_log(path)[0].items():
            timed.setdefault(study, {}).update(labels)
    measure, rows = GpuMeasurer(timeout=120), []
    for spec, T, rc, oc in pairs(ref, own, timed):
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
