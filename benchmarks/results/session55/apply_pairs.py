"""Write session 55's timed pairs (ref_pairs.json, benchmarks/calls/ref_pairs.py on an H100) into the H100's table.

  python benchmarks/results/session55/apply_pairs.py tuned/NVIDIA_H100_80GB_HBM3/sparse_mla.json

Every pair's incumbent (the H200's config, which the entry's tuning run could not time) gets its time from the
pair run (``incumbent_time_us``). Where it was the faster of the two, the entry takes it: its config and its time
(``time_us``); ``triton_bench_us`` (do_bench of the replaced config) is cleared, FlashInfer's time and the backend
stay (FlashInfer was 10x slower on these specs either way). Prints old -> new per entry; writes atomically.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from sparsemla.gen.render import atomic_write
from sparsemla.gen.spec import Config, config_label
from sparsemla.gen.tuned_table import parse_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/, for merge_tuned
from merge_tuned import append_note  # noqa: E402


def main(table_path: str) -> int:
    pairs = json.loads((Path(__file__).parent / "ref_pairs.json").read_text())
    table = json.loads(Path(table_path).read_text())
    for p in pairs:
        e = table["entries"][p["spec"]][str(p["bucket"])]
        assert config_label(Config.from_dict(e["incumbent"])) == p["ref"], (p, e)
        assert config_label(Config.from_dict(e["config"])) == p["own"], (p, e)
        e["incumbent_time_us"] = p["ref_us"]
        if p["ref_us"] < p["own_us"]:
            e.update(config=dict(e["incumbent"]), time_us=p["ref_us"], triton_bench_us=None)
            print(f"{p['spec']} T={p['bucket']}: {p['own']} -> {p['ref']} ({p['own_us']:.2f} -> {p['ref_us']:.2f} us)")
        else:
            print(f"{p['spec']} T={p['bucket']}: kept {p['own']} ({p['own_us']:.2f} us; {p['ref']} {p['ref_us']:.2f})")
    append_note(table["provenance"], "session 55: the H200's configs its tuning could not time, timed against its "
                "entries (benchmarks/results/session55/ref_pairs.json)")
    parse_table(table)  # what the runtime will read
    atomic_write(Path(table_path), json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
