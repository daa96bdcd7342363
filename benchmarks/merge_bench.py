"""Merge `sparsemla bench` result files (one per run, e.g. one per format) into one suite file.

Rows of later files replace rows of earlier ones with the same (format, T, H); every row keeps
the date and template hash of the run that measured it, and the Markdown says which rows come
from which run.

  python benchmarks/merge_bench.py OUT_BASE old.json new_bf16.json new_fp8.json
  (writes OUT_BASE.json and OUT_BASE.md; an input may itself be a merged file)

``--table tuned/NVIDIA_H200/sparse_mla.json`` lists the merged rows whose config that table no longer
selects (stale), and keeps a new row only if its config is the one that
table selects for the row: a re-tune's bench runs with the run's own table, and where the merge
kept the shipped entry, that row measured a config nobody ships (the older row stays).
"""
from __future__ import annotations

import argparse
import json

from pathlib import Path

from sparsemla.bench import HEADER, format_row, options_note
from sparsemla.bench_plot import try_plot
from sparsemla.gen.spec import config_label
from sparsemla.gen.render import atomic_write


def shipped_config(table: dict, r: dict) -> dict | None:
    """The config ``table`` (parsed) selects for bench row ``r``, as a dict; None if it has none."""
    from sparsemla.bench import FORMATS, TOPK
    from sparsemla.gen.spec import KernelSpec
    from sparsemla.gen.tuned_table import bucket_for
    fmt = FORMATS[r["format"]]
    spec = KernelSpec(kv_format=fmt.kv_format, d_qk=fmt.d_qk, num_heads=r["H"], topk=TOPK,
                      page_size=fmt.page_size or 1)
    entries = table.get(spec.key)
    return entries[bucket_for(r["T"], sorted(entries))].config.to_dict() if entries else None


def _run_id(run: dict) -> tuple:
    p = run["provenance"]
    return p["gpu"], p["date"], p["template_hash"]


def merge(paths: list[str], table: dict | None = None) -> dict:
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
            if table is not None and shipped_config(table, r) != r["config"]:
                print(f"{p}: {r['format']} T={r['T']} H={r['H']} dropped: {config_label(r['config'])} "
                      f"is not the table's config")
                continue
            rows[(r["format"], r["T"], r["H"])] = {**r, "date": prov["date"], "template_hash": prov["template_hash"]}
    first = {}
    for run in runs:  # a run given twice (directly or inside an earlier merge) is listed once
        first.setdefault(_run_id(run), run)
    runs = list(first.values())
    order = []
    for run in runs:
        order += [f for f in run["formats"] if f not in order]
    merged = sorted(rows.values(), key=lambda r: (order.index(r["format"]), r["T"], r["H"]))
    for run in runs:  # the formats each run still supplies rows of (none: the run is dropped)
        run["formats"] = sorted({r["format"] for r in merged if r["date"] == run["provenance"]["date"]})
    return dict(runs=[run for run in runs if run["formats"]], rows=merged)


def stale(res: dict, table: dict) -> list[tuple[dict, dict]]:
    """(row, the config ``table`` now selects) for each row measured with an older entry."""
    from sparsemla.gen.spec import Config
    out = []
    for r in res["rows"]:
        now = shipped_config(table, r)
        if now is not None and Config.from_dict(now) != Config.from_dict(r["config"]):
            out.append((r, now))
    return out


def stale_rows(res: dict, table: dict) -> list[str]:
    """The stale rows as Markdown lines."""
    return [f"- {r['format']} T={r['T']} H={r['H']} ({r['date'][:10]}): measured {config_label(r['config'])}, "
            f"the table now selects {config_label(now)}" for r, now in stale(res, table)]


def stale_bench_args(res: dict, table: dict) -> list[str]:
    """The stale rows as benchmarks/h200_steps.sh's bench_within arguments: "FORMAT H T1,T2,..."."""
    groups: dict[tuple[str, int], list[int]] = {}
    for r, _ in stale(res, table):
        groups.setdefault((r["format"], r["H"]), []).append(r["T"])
    return [f'"{f} {h} {",".join(map(str, sorted(ts)))}"' for (f, h), ts in sorted(groups.items())]


def markdown(res: dict, table: dict | None = None, picture: str | None = None) -> str:
    out = [f"# sparse MLA benchmark suite on {res['runs'][-1]['provenance']['gpu']}", "",
           "Merged from these runs (a later run's rows replace an earlier run's):", ""]
    for run in res["runs"]:
        p, c = run["provenance"], run["ceilings"]
        out.append(f"- {p['date']}, template {p['template_hash']}, Triton {p['triton']}, FlashInfer "
                   f"{p['flashinfer']}, torch {p['torch']}: formats {', '.join(run['formats'])} "
                   f"(ceilings: copy {c['copy_gbs']:.0f} GB/s, bf16 matmul {c['bf16_tflops']:.0f} TFLOP/s)"
                   + options_note(p))
    out += ["", "Columns as in `sparsemla bench` (pkg/bench.py): 'us' = kernel time per call by CUDA-graph "
            "replay over rotating inputs, both libraries; 'call us' = one eager call (do_bench); step "
            "columns = wall time per call of back-to-back eager calls over the rotating sets, 'auto' "
            "through sparse_mla's dispatch (the tuned table's backend), 'FI step' = FlashInfer plan() + run() "
            "(new indices every step). Rows without step columns come from a run before they existed.", ""]
    out += [picture, ""] if picture else []
    out += [HEADER]
    out += [format_row(r) for r in res["rows"]]
    lines = stale_rows(res, table) if table is not None else []
    if lines:
        out += ["", f"Stale rows ({len(lines)}): not re-benched since the table's entry for them changed.", ""]
        out += lines
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_base")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--table", help="keep a new row only if this tuned table selects its config")
    ap.add_argument("--stale-args", action="store_true",
                    help="also print the stale rows as bench_within arguments (benchmarks/h200_steps.sh)")
    args = ap.parse_args()
    from sparsemla.gen.tuned_table import load_table
    table = load_table(args.table, check_provenance=False) if args.table else None
    res = merge(args.inputs, table)
    base = args.out_base
    atomic_write(Path(base + ".json"), json.dumps(res, indent=1))
    atomic_write(Path(base + ".md"), markdown(res, table, try_plot(res, base)))
    if args.stale_args and table is not None:
        print(" ".join(stale_bench_args(res, table)))
