"""Each study of a GPU's own tuning run against the reference part's config, both timed in that study.

  python benchmarks/own_vs_reference.py tuned/NVIDIA_H200/sparse_mla.json RUN/tune_*.log[.gz] ...

A GPU without a table of its own runs its arch's reference part's (an H100 the H200's), and its own
run seeds every study with that config (trial #1), so the run's log holds both times from the same
process. This prints, per study: the reference config and its time here, the run's winner and its time
(both as the trials measured them), and the speedup of shipping the winner over what the GPU runs without
it ("-" where the reference config was not measured, e.g. one outside the tuner's space: then the run
shows nothing against it). The last line counts the studies.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics

from sparsemla.gen.spec import config_label

# (no ^: parallel workers' lines are sometimes glued together in the log)
TRIAL = re.compile(r"\[(\S+) T=(\d+)\] #\d+ ([^:|\[]+?): ([\d.]+) us \|")
BEST = re.compile(r"\[(\S+) T=(\d+)\] best ([^|\[,]+?) ([\d.]+) us(?:,| \()")


def read_log(path: str) -> tuple[dict, dict]:
    """(times[(key, T)][config label], best[(key, T)] = (label, us)) from a tuner's log."""
    times, best = {}, {}
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            for m in TRIAL.finditer(line):
                times.setdefault((m[1], int(m[2])), {})[m[3]] = float(m[4])
            for m in BEST.finditer(line):
                best[(m[1], int(m[2]))] = (m[3], float(m[4]))
    return times, best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reference", help="the reference part's table (e.g. tuned/NVIDIA_H200/sparse_mla.json)")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    ref = json.load(open(args.reference))["entries"]
    times, best = {}, {}
    for path in args.logs:  # later logs win (a re-run of a study)
        t, b = read_log(path)
        for study in b:
            times[study] = t.get(study, {})
        best.update(b)
    print("| study | reference config | its us here | own winner | us | speedup |")
    print("|---|---|---|---|---|---|")
    gains, unmeasured = [], 0
    for (key, bucket), (label, us) in sorted(best.items()):
        entry = ref.get(key, {}).get(str(bucket))
        ref_label = config_label(entry["config"]) if entry else "-"
        ref_us = times[(key, bucket)].get(ref_label) if entry else None
        us = times[(key, bucket)].get(label, us)  # both as first measured (the best line's is a re-measurement)
        if ref_us is None:
            unmeasured += 1
        else:
            gains.append(ref_us / us)
        name = key.replace("sparse_mla-sm90-", "").replace("-qbf16-cbf16", "")
        print(f"| {name} T={bucket} | {ref_label} | {f'{ref_us:.2f}' if ref_us else '-'} | "
              f"{label} | {us:.2f} | {f'{ref_us / us:.3f}' if ref_us else '-'} |")
    same = sum(1 for (k, b), (label, _) in best.items()
               if (e := ref.get(k, {}).get(str(b))) and config_label(e["config"]) == label)
    print(f"\n{len(best)} studies: {same} chose the reference config; {len(gains)} timed it "
          f"(speedup geomean {statistics.geometric_mean(gains) if gains else float('nan'):.3f}, "
          f"max {max(gains, default=float('nan')):.3f}); {unmeasured} did not")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
