"""Exhaustive grid vs TPE on the GPU: does TPE find a config within 3% of the grid's best
with at most a quarter of the grid's measurements?

  python benchmarks/tune_compare.py --out benchmarks/results/tune_compare
  python benchmarks/tune_compare.py --out DIR --specs bf16:16:64 --timeout 60

A spec is format:H:T (formats of sparsemla.gen.suite). Both studies live in a journal under
--out, so an interrupted run resumes. The grid measures every config that passes the
compile constraint; TPE then gets a budget of a quarter of that, once per sampler seed of
--tpe-seeds (one TPE run can be lucky or not: several show how often it lands within 3%).
Writes compare.json and compare.md under --out and prints the table last.

A grid measured under an older template (study names carry the template hash) is reused with
--carry-grid-from HASH8 when that template compiles the grid's configs to the same PTX
(benchmarks/ptx_same.py); TPE then searches only the fields that grid searched, the rest at
their Config default, so both studies search one space. The winners are always re-measured
side by side with the current template.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

DEFAULT_SPECS = "bf16:16:64,fp8_ds_mla:16:1,fp8:16:4"


def confirm(measure, spec, T: int, trials: list, repeats: int) -> list:
    """Median of ``repeats`` fresh measurements of each trial's config, interleaved.

    The best of a few hundred noisy measurements is biased low (the fastest configs are near
    ties, and the minimum picks whichever drew the luckiest noise), and the two studies may
    have run on different days or machines; the winners are compared on new measurements
    taken side by side."""
    import statistics

    from sparsemla.gen.tune import remeasure, trial_config

    times = remeasure(measure, spec, T, [trial_config(t) for t in trials], repeats)
    ok = [[x for x in ts if x is not None] for ts in times]
    return [statistics.median(x) if x else None for x in ok]


def grid_fields(journal: str, name: str) -> tuple | None:
    """The fields an existing grid study searched (None: no such study; search them all)."""
    import optuna
    from sparsemla.gen.search_space import PARAMS

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None
    fields = {p for t in study.get_trials(deepcopy=False) for p in t.params}
    return tuple(p for p in PARAMS if p in fields) or None


def carry_grid(journal: str, name: str, old_hash: str) -> None:
    """Copy the grid study measured under template ``old_hash`` to ``name`` (the current
    template's), unless ``name`` exists already."""
    import optuna

    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
    names = {s.study_name for s in optuna.get_all_study_summaries(storage)}
    old = name.rsplit("/", 1)[0] + "/" + old_hash + "-" + name.rsplit("-", 1)[1]
    if name in names:
        return
    if old not in names:
        raise SystemExit(f"--carry-grid-from {old_hash}: no study {old!r} in {journal}")
    optuna.copy_study(from_study_name=old, from_storage=storage, to_storage=storage, to_study_name=name)
    print(f"carried {old} -> {name}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--specs", default=DEFAULT_SPECS, help="format:H:T,... (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--max-spill", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0, help="the grid's sampler seed (its order)")
    ap.add_argument("--tpe-seeds", default="0", help="comma list: one TPE study per sampler seed")
    ap.add_argument("--carry-grid-from", default=None,
                    help="template hash (8 hex) of a grid study to reuse under the current template")
    ap.add_argument("--repeats", type=int, default=7, help="fresh measurements of each study's winner")
    ap.add_argument("--parallel", type=int, default=6, help="trials in flight (compiled in parallel)")
    args = ap.parse_args(argv)

    import optuna
    import torch

    from sparsemla.gen.gpu_measure import GpuMeasurer, JitWarmer
    from sparsemla.gen.search_space import CompileConstraint, space_size
    from sparsemla.gen.suite import suite_spec
    from sparsemla.gen.render import atomic_write
    from sparsemla.gen.spec import config_label
    from sparsemla.gen.tune import TuneSettings, _confirmations, best_trial, measured_trials, run_study, \
        study_name, study_space, trial_config, trial_time
    from sparsemla.gen.tuned_table import gpu_dirname, software_provenance
    from sparsemla.runtime.api import device_arch

    if not torch.cuda.is_available():
        print("tune_compare needs a CUDA GPU", file=sys.stderr)
        return 2
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda", 0)
    gpu = gpu_dirname(torch.cuda.get_device_name(dev))
    arch = device_arch(dev)
    journal = str(out / "compare.journal")
    measure = GpuMeasurer(args.timeout)
    constraint = CompileConstraint(args.max_spill, jobs=args.parallel)
    warm = JitWarmer(args.parallel, timeout=2 * args.timeout) if args.parallel > 1 else None
    rows = []
    try:
        for item in args.specs.split(","):
            fmt, H, T = item.split(":")
            spec, T = suite_spec(fmt, int(H), arch), int(T)
            grid_gpu = f"{gpu}-grid"
            if args.carry_grid_from:
                carry_grid(journal, study_name(spec, T, grid_gpu), args.carry_grid_from)
            fields = grid_fields(journal, study_name(spec, T, grid_gpu))
            grid = run_study(spec, T, measure, storage=journal, gpu=grid_gpu, constraint=constraint,
                             settings=TuneSettings(None, "grid", args.seed, args.max_spill, args.timeout,
                                                   args.parallel, fields=fields), warm=warm)
            n_grid = len(measured_trials(grid))
            budget = max(1, n_grid // 4)
            tpes = []
            for seed in [int(x) for x in args.tpe_seeds.split(",")]:
                tpes.append((seed, run_study(
                    spec, T, measure, storage=journal, gpu=f"{gpu}-tpe" + (f"-seed{seed}" if seed else ""),
                    constraint=constraint, warm=warm,
                    settings=TuneSettings(budget, "tpe", seed, args.max_spill, args.timeout, args.parallel,
                                          fields=fields))))
            gb = best_trial(grid)
            tbs = [best_trial(tpe) for _, tpe in tpes]
            confirmed = (confirm(measure, spec, T, [gb] + tbs, args.repeats) if gb and all(tbs)
                         else [None] * (1 + len(tbs)))
            base = [t for t in grid.trials if t.user_attrs.get("baseline")]
            for (seed, tpe), tb, tc in zip(tpes, tbs, confirmed[1:]):
                row = dict(spec=spec.key, format=fmt, H=int(H), T=T, tpe_seed=seed,
                           fields=list(fields) if fields else None,
                           space=space_size(study_space(spec, TuneSettings(fields=fields))),
                           grid_trials=len(grid.trials), grid_measured=n_grid,
                           grid_best_us=trial_time(gb, _confirmations(grid)) if gb else None,
                           grid_config=trial_config(gb).to_dict() if gb else None,
                           tpe_budget=budget, tpe_trials=len(tpe.trials), tpe_measured=len(measured_trials(tpe)),
                           tpe_best_us=trial_time(tb, _confirmations(tpe)) if tb else None,
                           tpe_config=trial_config(tb).to_dict() if tb else None,
                           default_us=base[0].value if base and base[0].value is not None else None)
                row["tpe_over_grid"] = row["tpe_best_us"] / row["grid_best_us"] if gb and tb else None
                row["grid_confirmed_us"], row["tpe_confirmed_us"] = confirmed[0], tc
                row["confirmed_ratio"] = tc / confirmed[0] if None not in (tc, confirmed[0]) else None
                row["pass"] = bool(row["confirmed_ratio"] is not None and row["confirmed_ratio"] <= 1.03
                                   and row["tpe_measured"] <= n_grid / 4)
                rows.append(row)
    finally:
        measure.close()
        constraint.close()
        if warm is not None:
            warm.close()

    prov = dict(gpu=torch.cuda.get_device_name(dev), arch=arch, **software_provenance(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    atomic_write(out / "compare.json", json.dumps(dict(provenance=prov, rows=rows), indent=1))

    def f(x, spec=".2f"):
        return "-" if x is None else format(x, spec)

    def c(cfg):
        return "-" if not cfg else config_label(cfg)

    md = [f"# Grid vs TPE on {prov['gpu']} ({arch})", "",
          f"{prov['date']}; torch {prov['torch']}, Triton {prov['triton']}, sparsemla {prov['sparsemla']} "
          f"(template {prov['template_hash']}). Times: CUDA-graph replay median per call, rotating inputs "
          f"over >100 MB of KV. measured = configs run on the GPU (compile-rejected and repeated ones "
          f"excluded). best us = the study's winner (the median of its 3 measurements: finalists are "
          f"measured twice more); confirmed us = median of "
          f"{args.repeats} new measurements of that config, the two winners interleaved in this run. "
          f"pass = TPE's winner within 3% of the grid's on the confirmed times, with at most a quarter "
          f"of the grid's measurements.", "",
          "| format | H | T | TPE seed | space | grid measured | grid best us | grid confirmed us | grid config | "
          "TPE measured | TPE best us | TPE confirmed us | TPE config | TPE/grid (best) | TPE/grid (confirmed) "
          "| default us | pass |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['format']} | {r['H']} | {r['T']} | {r['tpe_seed']} | {r['space']} | {r['grid_measured']} | "
                  f"{f(r['grid_best_us'])} | {f(r['grid_confirmed_us'])} | {c(r['grid_config'])} | "
                  f"{r['tpe_measured']} | {f(r['tpe_best_us'])} | {f(r['tpe_confirmed_us'])} | "
                  f"{c(r['tpe_config'])} | {f(r['tpe_over_grid'], '.3f')} | {f(r['confirmed_ratio'], '.3f')} | "
                  f"{f(r['default_us'])} | {'yes' if r['pass'] else 'NO'} |")
    n_pass = sum(r["pass"] for r in rows)
    md += ["", f"{n_pass} of {len(rows)} TPE runs pass."]
    text = "\n".join(md) + "\n"
    atomic_write(out / "compare.md", text)
    print(text)
    return 0 if rows and all(r["pass"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
