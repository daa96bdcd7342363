"""Merge `sparsemla bench` result files (one per run, e.g. one per format) into one suite file.

Rows of later files replace rows of earlier ones with the same (format, T, H); every row keeps
the date and template hash of the run that measured it, and the Markdown says which rows come
from which run.

  python benchmarks/merge_bench.py OUT_BASE old.json new_bf16.json new_fp8.json
  (writes OUT_BASE.json and OUT_BASE.md; an input may itself be a merged file)
"""
from __future__ import annotations

import json
import sys

from pathlib import Path

from sparsemla.bench import HEADER, format_row
from sparsemla.gen.render import atomic_write


def merge(paths: list[str]) -> dict:
    rows, runs = {}, []
    for p in paths:
        res = json.load(open(p))
        if "runs" in res:  # an earlier merge: its runs and rows as they are
            runs += res["runs"]
            rows.update({(r["format"], r["T"], r["H"]): r for r in res["rows"]})
            continue
        prov = res["provenance"]
        runs.append(dict(file=p, provenance=prov, ceilings=res["ceilings"],
                         formats=sorted({r["format"] for r in res["rows"]})))
        for r in res["rows"]:
            rows[(r["format"], r["T"], r["H"])] = {**r, "date": prov["date"], "template_hash": prov["template_hash"]}
    order = []
    for run in runs:
        order += [f for f in run["formats"] if f not in order]
    merged = sorted(rows.values(), key=lambda r: (order.index(r["format"]), r["T"], r["H"]))
    for run in runs:  # the formats each run still supplies rows of (none: the run is dropped)
        run["formats"] = sorted({r["format"] for r in merged if r["date"] == run["provenance"]["date"]})
    return dict(runs=[run for run in runs if run["formats"]], rows=merged)


def markdown(res: dict) -> str:
    out = [f"# sparse MLA benchmark suite on {res['runs'][-1]['provenance']['gpu']}", "",
           "Merged from these runs (a later run's rows replace an earlier run's):", ""]
    for run in res["runs"]:
        p, c = run["provenance"], run["ceilings"]
        out.append(f"- {p['date']}, template {p['template_hash']}, Triton {p['triton']}, FlashInfer "
                   f"{p['flashinfer']}, torch {p['torch']}: formats {', '.join(run['formats'])} "
                   f"(ceilings: copy {c['copy_gbs']:.0f} GB/s, bf16 matmul {c['bf16_tflops']:.0f} TFLOP/s)")
    out += ["", "Columns as in `sparsemla bench` (pkg/bench.py): 'us' = kernel time per call by CUDA-graph "
            "replay over rotating inputs, both libraries; 'call us' = one eager call (do_bench); step "
            "columns = wall time per call of back-to-back eager calls over the rotating sets, 'auto' "
            "through sparse_mla's dispatch (the tuned table's backend), 'FI step' = FlashInfer plan() + run() "
            "(new indices every step). Rows without step columns come from a run before they existed.", "",
            HEADER]
    out += [format_row(r) for r in res["rows"]]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    base, *paths = sys.argv[1:]
    res = merge(paths)
    atomic_write(Path(base + ".json"), json.dumps(res, indent=1))
    atomic_write(Path(base + ".md"), markdown(res))
