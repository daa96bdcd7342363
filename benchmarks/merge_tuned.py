"""Merge a device run's tuned table into the shipped one, entry by entry.

  python benchmarks/merge_tuned.py RUN.json tuned/NVIDIA_H200/sparse_mla.json [--note TEXT] [--match REGEX]

``write_table`` cannot do this here: it drops every entry of a file whose provenance is not this
machine's software (the device runs Triton 3.6, this machine may not). This script checks that
both files name the same GPU folder, template hash and Triton major.minor, replaces the
shipped entries the run holds (after validating them with the runtime's parser; with
``--only-faster`` only where the run's time is lower, e.g. when the run's studies were not seeded
with the shipped configs), appends
``--note`` to the provenance's template_note, writes atomically and prints old -> new per entry.
``--match`` merges only the spec keys it matches (re.search), e.g. the studies of one run when the
run's table also holds older entries.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from sparsemla.gen.render import atomic_write
from sparsemla.gen.spec import config_label
from sparsemla.gen.tuned_table import parse_table


def append_note(provenance: dict, note: str) -> None:
    """Append ``note`` to a table's provenance template_note ("; "-separated)."""
    provenance["template_note"] = (provenance.get("template_note", "") + "; " + note).lstrip("; ")


def _minor(v) -> str:
    return ".".join(str(v).split(".")[:2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("shipped")
    ap.add_argument("--note", default="", help="appended to provenance.template_note")
    ap.add_argument("--only-faster", action="store_true", help="keep a shipped entry whose time is lower")
    ap.add_argument("--match", default="", help="merge only the spec keys this regex finds")
    args = ap.parse_args()
    run, shipped = (json.load(open(p)) for p in (args.run, args.shipped))
    parse_table(run)  # raises ValueError naming the first bad entry
    a, b = run["provenance"], shipped["provenance"]
    for what, x, y in (("gpu", run["gpu"], shipped["gpu"]),
                       ("template_hash", a.get("template_hash"), b.get("template_hash")),
                       ("triton", _minor(a.get("triton")), _minor(b.get("triton")))):
        if x != y:
            print(f"{args.run}: {what} {x!r} != {y!r} in {args.shipped}: not merged", file=sys.stderr)
            return 2
    for key, buckets in sorted(run["entries"].items()):
        if not re.search(args.match, key):
            continue
        for bucket, e in sorted(buckets.items(), key=lambda kv: int(kv[0])):
            old = shipped["entries"].setdefault(key, {}).get(bucket)
            was = f"{config_label(old['config'])} {old.get('time_us') or 0:.1f} us" if old else "-"
            keep = (args.only_faster and old and old.get("time_us") and e.get("time_us")
                    and old["time_us"] <= e["time_us"])
            print(f"{key} T={bucket}: {was} -> {config_label(e['config'])} {e.get('time_us') or 0:.1f} us"
                  + ("  (kept the shipped entry: faster)" if keep else ""))
            if not keep:
                shipped["entries"][key][bucket] = e
    if args.note:
        append_note(b, args.note)
    parse_table(shipped)
    atomic_write(Path(args.shipped), json.dumps(shipped, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
