"""Shared by session 24's variant scripts (persistent.py, persistent_abba.py, staged_out.py, prefill_out.py): suite
rows timed for runtime variants, each variant set by a function that patches the runtime (and clears the call
cache), checked against the reference first (gen.gpu_measure.check on poisoned inputs), then timed in the given
orders (CUDA-graph replay over rotating inputs, gen.gpu_measure.time_calls), median us per call. Session 24 call
5 found the first of a pair runs faster, so an order list should rotate which goes first. (Calls 3, 6 and 8 ran
each script's own copy of this loop, at the commits their README names: the same checks, orders and medians;
staged_out.py's table had no units column.)
"""
import statistics

import torch

from sparsemla.gen.gpu_measure import _calls, check, make_inputs, time_calls, timing_sets
from sparsemla.gen.suite import suite_spec
from sparsemla.runtime.dispatch import select_config


def wide_unsplit(spec, config) -> bool:
    """Whether ``config`` runs the wide Gluon kernel without split-K on a bf16 cache: what can run persistent (the
    scripts that force the persistent kernel past runtime/triton_backend.persistent_for's rounds take these)."""
    return config.gluon and config.block_h == 64 and config.num_splits == 1 and spec.kv_format == "auto"



def timed_in_orders(sets, config, variants: dict, orders, skip=()) -> dict:
    """{name: us per call, one per order} of ``variants`` ({name: function that sets the runtime up}, the
    ``skip`` ones left out) on the rotating input ``sets`` with ``config`` (None: the runtime's choice), each
    repetition in one order of ``orders`` (tuples of indices into ``variants``)."""
    names = list(variants)
    times = {name: [] for name in names}
    for order in orders:
        for i in order:
            if names[i] not in skip:
                variants[names[i]]()
                times[names[i]].append(time_calls(_calls(sets, config))[0])
    return times


def alternating(reps: int) -> tuple:
    """Orders of two variants over ``reps`` repetitions, the first going first in every other one (ABBA...)."""
    return tuple(((0, 1), (1, 0))[r % 2] for r in range(reps))


def rotating(n: int, reps: int) -> tuple:
    """Orders of ``n`` variants over ``reps`` repetitions, each repetition starting one variant further on."""
    return tuple(tuple((r + i) % n for i in range(n)) for r in range(reps))


def time_rows(rows: str, variants: dict, orders, dev, checked: bool = True) -> list[str]:
    """``rows`` ("format:T:H,...") timed for ``variants`` ({name: function that sets the runtime up}), each
    repetition in one order of ``orders`` (tuples of variant indices); the Markdown table's lines, each row also
    printed as it completes with its runs. With two variants the last column is the first's time over the
    second's. ``checked=False``: timing only, for variants whose outputs are wrong on purpose (diagnostics)."""
    names = list(variants)
    head = "| format | T | H | config | units | " + " | ".join(names) + " |"
    lines = [head + (f" {names[0]} / {names[1]} |" if len(names) == 2 else ""),
             "|" + "---|" * (5 + len(names) + (len(names) == 2))]
    for row in rows.split(","):
        fmt, T, H = row.split(":")
        T, H = int(T), int(H)
        spec = suite_spec(fmt, H, "sm90")
        cfg = select_config(spec, T, dev)
        units = T * -(-H // cfg.block_h) * cfg.num_splits
        failed, errors = dict.fromkeys(names, ""), {}
        if checked:
            kw = make_inputs(spec, T, dev, slots=min(2 * T * spec.topk, 1 << 20), poison=True)
            for name, setup in variants.items():
                setup()
                res = check(spec, cfg, kw)
                failed[name] = "" if res.ok else f" FAILED: {res.reason}"
                errors[name] = f"{res.error:.2e}"
            del kw
        sets = timing_sets(spec, T, dev)
        times = timed_in_orders(sets, cfg, variants, orders, skip={n for n in names if failed[n]})
        med = {name: statistics.median(v) for name, v in times.items() if v}
        cells = [(f"{med[n]:.2f}" if n in med else "-") + failed[n] for n in names]
        if len(names) == 2:
            cells.append(f"{med[names[0]] / med[names[1]]:.3f}" if len(med) == 2 else "nan")
        label = f"h{cfg.block_h} s{cfg.num_splits} st{cfg.num_stages}" + (" gl" if cfg.gluon else "")
        line = f"| {fmt} | {T} | {H} | {label} | {units} | " + " | ".join(cells) + " |"
        print(line, f"(rel err: {errors}; runs: {times})" if checked else f"(runs: {times})", flush=True)
        lines.append(line)
        del sets
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return lines
