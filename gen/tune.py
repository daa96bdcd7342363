"""The offline tuner: one Optuna study per (GPU, spec, token bucket), run once per GPU model.

Buckets: tuning measures T = 1, 2, 4, ..., 4096 query tokens (the suite uses a subset); a
call with T tokens uses the config of the nearest tuned bucket not above T, else of the
smallest one (``bucket_for``: T=3 -> 2, T=5000 -> 4096, and T=1 -> 4 if 4 is the smallest
tuned bucket).

A trial suggests a Config from ``search_space``; the compile constraint rejects it before
any GPU time if it does not build, needs too much shared memory or spills more than
``max_spill`` bytes (state PRUNED, user attr "rejected"); otherwise ``measure(spec, config,
T) -> Measurement`` checks and times it. A wrong result, a crash or a hang is state FAIL
(user attr "fail") and never a candidate. The arch's default config is enqueued first (and
exempt from the spill bound), so the result is never worse than the default; with TPE the
table's current config for the bucket and its on/off twins follow (``incumbent_seeds``), then
the default's split-count neighbours (``split_seeds``), then on sm90 the Gluon kernel's tilings
(``gluon_seeds``; ``Config.gluon`` is a searched field there). A config seen
before is not measured again ("duplicate_of"). The budget counts measured configs; seeds not
yet measured keep their places in it, in the order they were enqueued, so with trials in flight neither
sampled configs nor later seeds crowd them out.

Sampler: TPE (multivariate, constant liar, seeded) or an exhaustive grid. Storage: an Optuna
journal file per GPU under the user cache dir by default, so an interrupted run resumes; an
RDB URL with ``--storage``; ``--workers N`` runs N processes, one per visible GPU, on the
same studies. Results go to ``tuned/<gpu>/sparse_mla.json`` (``gen.tuned_table``).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import optuna
from optuna.trial import TrialState

from .gpu_measure import Measurement, failed
from .render import attention_template_hash, cache_dir
from .search_space import (ON_OFF, PARAMS, CompileConstraint, all_configs, restricted, search_space, space_size,
                           static_reason)
from .spec import ARCHS, Config, KernelSpec, config_label, default_config, filling_splits
from .suite import SUITE_FORMATS, format_list, positive_int_list, suite_specs
from .tuned_table import (BUCKETS, STATIC_GPUS, TunedEntry, bucket_for, gpu_dirname, load_tables, package_dir,
                          software_provenance, stand_in_gpus, today, user_dir, write_table)

__all__ = ["BUCKETS", "bucket_for", "Measurement", "TuneSettings", "run_study", "best_trial",
           "study_entry", "seed_entry", "static_entries", "tune_main"]

FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
_DEFAULTS = Config()


@dataclass(frozen=True)
class TuneSettings:
    trials: int | None = 48  # measured configs per study; None: until the space is exhausted
    sampler: str = "tpe"  # or "grid"
    seed: int = 0
    max_spill: int = 0
    timeout: float = 60.0  # seconds one measurement may take
    parallel: int = 1  # trials in flight: compiled and warmed concurrently, measured one at a time
    confirm_top: int = 3  # when the search ends, the fastest configs are re-measured ...
    confirm_repeats: int = 2  # ... this many more times each, and ranked by their median
    # Fields searched (None: all of the spec's space); a field left out keeps its Config
    # default, in the default config too (to compare against a grid measured before a field existed).
    fields: tuple[str, ...] | None = None


def study_space(spec: KernelSpec, settings: TuneSettings) -> dict:
    """The spec's search space, restricted to ``settings.fields``."""
    return restricted(search_space(spec), settings.fields)


def study_default(spec: KernelSpec, bucket: int, settings: TuneSettings) -> Config:
    """The arch's default config, with the fields ``settings.fields`` leaves out at Config's default."""
    d = default_config(spec, bucket)
    if settings.fields is None:
        return d
    return replace(d, **{p: getattr(_DEFAULTS, p) for p in PARAMS if p not in settings.fields})


def study_name(spec: KernelSpec, bucket: int, gpu: str) -> str:
    """GPU, spec key and bucket, plus the templates, Triton and search space they were measured with (an
    Optuna study cannot take other choices for a parameter it has sampled: another space is another study)."""
    import triton
    tv = ".".join(triton.__version__.split(".")[:2])
    space = hashlib.sha256(json.dumps(search_space(spec), sort_keys=True).encode()).hexdigest()[:6]
    return f"{gpu}/{spec.key}/T{bucket}/{attention_template_hash()[:8]}-triton{tv}-space{space}"


def default_journal(gpu: str) -> Path:
    return cache_dir().parent / "tune" / f"{gpu}.journal"


def open_storage(storage, gpu: str = "cpu"):
    """An Optuna storage: an object as is, an RDB URL, or a journal file (default per GPU)."""
    if storage is not None and not isinstance(storage, (str, Path)):
        return storage
    if storage and "://" in str(storage):
        return str(storage)
    try:
        from optuna.storages.journal import JournalFileBackend
    except ImportError:  # optuna < 4
        from optuna.storages import JournalFileStorage as JournalFileBackend
    path = Path(storage) if storage else default_journal(gpu)
    path.parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def make_sampler(kind: str, space: dict, seed: int, trials: int | None = None):
    if kind == "grid":
        return optuna.samplers.GridSampler(space, seed=seed)
    if kind == "tpe":
        # Optuna's default of 10 random startup trials would be most of a small budget.
        startup = max(4, min(10, (trials or 40) // 4))
        return optuna.samplers.TPESampler(multivariate=True, constant_liar=True, seed=seed,
                                          n_startup_trials=startup)
    raise ValueError(f"sampler={kind!r}: expected 'tpe' or 'grid'")


def _params(t) -> tuple:
    """A trial's config as a tuple over PARAMS; a field its space did not hold (a space
    searches only the fields that can matter) takes the Config default."""
    return tuple(t.params.get(p, getattr(_DEFAULTS, p)) for p in PARAMS)


def trial_config(t) -> Config:
    """The Config a finished trial measured."""
    return Config(**dict(zip(PARAMS, _params(t))))


def remeasure(measure: Callable, spec: KernelSpec, bucket: int, configs: list, repeats: int) -> list[list]:
    """``repeats`` more measurements of each config, interleaved so drift over the run hits
    them alike; per config its times (None where a measurement failed or crashed)."""
    times = [[] for _ in configs]
    for _ in range(repeats):
        for i, cfg in enumerate(configs):
            try:
                m = measure(spec, cfg, bucket)
            except Exception:  # as in a trial: a crash fails the config
                m = failed("crashed when re-measured")
            times[i].append(m.time_us if m.ok and math.isfinite(m.time_us) and m.time_us > 0 else None)
    return times


def _is_measured(t) -> bool:
    a = t.user_attrs
    return t.state in (TrialState.COMPLETE, TrialState.FAIL) and ("time_us" in a or "fail" in a) \
        and "duplicate_of" not in a


def measured_trials(study) -> list:
    return [t for t in study.get_trials(deepcopy=False) if _is_measured(t)]


def _confirmations(study) -> dict:
    """{trial number: re-measured times (None: that measurement failed)}, kept in a study
    attribute (a finished trial's own attributes cannot change)."""
    return {int(k): v for k, v in study.user_attrs.get("confirm_us", {}).items()}


def trial_time(t, confirmations: dict) -> float:
    """A trial's time: the median of its measurement and its re-measurements; inf if one of
    them failed (a config that is sometimes wrong or crashes never ships)."""
    again = confirmations.get(t.number)
    if not again:
        return t.value
    if any(x is None for x in again):
        return math.inf
    return statistics.median([t.value, *again])


def _correct_trials(study) -> list:
    """Trials that measured a time (a wrong, crashed or rejected config has none)."""
    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if t.value is not None and math.isfinite(t.value)]


def best_trial(study):
    """The fastest correct trial (by ``trial_time``), or None."""
    ok = _correct_trials(study)
    conf = _confirmations(study)
    ok = [t for t in ok if math.isfinite(trial_time(t, conf))]
    return min(ok, key=lambda t: (trial_time(t, conf), t.number)) if ok else None


def confirm_finalists(study, spec: KernelSpec, bucket: int, measure: Callable, top: int, repeats: int,
                      warm: Callable | None = None) -> None:
    """Measure the ``top`` fastest configs ``repeats`` more times (those not yet confirmed).

    Each config is measured once during the search, so the fastest of many measurements is
    biased low: among near-ties the minimum picks the luckiest noise (on the H200, measurements
    of ~12 us kernels vary by ~1.5%; the fastest of 400 sat ~4-8% under a re-measurement).
    The winner is then the best median."""
    if top <= 0 or repeats <= 0:
        return
    ok = sorted((t for t in _correct_trials(study) if "duplicate_of" not in t.user_attrs),
                key=lambda t: (t.value, t.number))
    conf = _confirmations(study)
    todo = [t for t in ok[:top] if t.number not in conf]
    if not todo:
        return
    cfgs = [trial_config(t) for t in todo]
    if warm is not None:  # a resumed study's finalists may not be compiled in this process yet
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(todo)) as ex:
            list(ex.map(lambda c: warm(spec, c), cfgs))
    for t, times in zip(todo, remeasure(measure, spec, bucket, cfgs, repeats)):
        conf[t.number] = times
    study.set_user_attr("confirm_us", {str(k): v for k, v in conf.items()})


def _is_seed(t) -> bool:
    return bool(t.user_attrs.get("seed") or t.user_attrs.get("baseline"))


def _pending_seeds(study, number: int, earlier_only: bool = False) -> int:
    """Enqueued seeds (and the default) other than trial ``number`` that have no outcome yet; with
    ``earlier_only``, only those enqueued before it (the queue's order is the seeds' priority)."""
    return sum(1 for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
               if t.number != number and _is_seed(t) and (not earlier_only or t.number < number))


class Objective:
    """One trial: suggest, skip duplicates, compile-check, warm (optional, runs concurrently
    in parallel trials), then measure; measurements never overlap, so timings stay clean."""

    def __init__(self, spec: KernelSpec, bucket: int, measure: Callable, constraint: CompileConstraint,
                 space: dict, warm: Callable | None = None, budget: int | None = None):
        import threading
        self.spec, self.bucket, self.measure, self.constraint, self.space = spec, bucket, measure, constraint, space
        self.warm, self.budget = warm, budget
        self._measure_lock = threading.Lock()
        # Measurements so far, counted under the lock: a parallel trial's finished measurement
        # is not in the study until Optuna records its value, after the lock is released.
        self._measured: int | None = None

    def _seen(self, study, params: tuple, number: int):
        """An earlier finished trial with the same config and a recorded outcome."""
        for t in study.get_trials(deepcopy=False, states=FINISHED):
            if t.number != number and _params(t) == params and (
                    {"time_us", "fail", "rejected"} & set(t.user_attrs)):
                return t
        return None

    def __call__(self, trial: optuna.Trial) -> float:
        cfg = Config(**{p: trial.suggest_categorical(p, self.space[p]) for p in PARAMS if p in self.space})
        prev = self._seen(trial.study, _params(trial), trial.number)
        if prev is not None:
            trial.set_user_attr("duplicate_of", prev.number)
            for k in ("rejected", "fail", "time_us"):
                if k in prev.user_attrs:
                    trial.set_user_attr(k, prev.user_attrs[k])
            if prev.state == TrialState.PRUNED:
                raise optuna.TrialPruned(prev.user_attrs["rejected"])
            return prev.value if prev.state == TrialState.COMPLETE else math.nan
        # The default is what runs untuned anyway: measure it even if it spills.
        baseline = trial.user_attrs.get("baseline", False)
        why = self.constraint.reason(self.spec, cfg, max_spill=(1 << 30) if baseline else None)
        if why:
            trial.set_user_attr("rejected", why)
            raise optuna.TrialPruned(why)
        if self.warm is not None:
            note = self.warm(self.spec, cfg)
            if note:
                trial.set_user_attr("warm", note[:200])
        with self._measure_lock:
            # Trials still in flight when the budget fills are not measured: the budget is exact.
            # Seeds not measured yet keep their places in it: with trials in flight a sampled
            # config that compiles sooner would otherwise take a seed's place (H200, session 8:
            # with 5 measurements and 8 in flight, a table's incumbent went unmeasured), and against
            # seeds enqueued after them (an H100, session 53: with more seeds than the budget, the
            # incumbent, a slow Gluon compile, lost its place to its own twins).
            if self._measured is None:
                self._measured = len(measured_trials(trial.study))
            reserved = _pending_seeds(trial.study, trial.number, earlier_only=_is_seed(trial))
            if self.budget is not None and self._measured + reserved >= self.budget:
                trial.set_user_attr("skipped", "budget met")  # not an outcome: may run on resume
                raise optuna.TrialPruned("budget met")
            self._measured += 1
            try:
                m = self.measure(self.spec, cfg, self.bucket)
            except Exception as e:  # a measurer bug or a crash in-process: this config fails
                m = failed(f"{type(e).__name__}: {e}")
        if math.isfinite(m.error):
            trial.set_user_attr("error", m.error)
        if not m.ok or not math.isfinite(m.time_us) or m.time_us <= 0:
            trial.set_user_attr("fail", m.reason or "not ok")
            return math.nan  # Optuna records a NaN value as state FAIL
        trial.set_user_attr("time_us", m.time_us)
        if m.reason:
            trial.set_user_attr("note", m.reason)
        return m.time_us


class Progress:
    """One line per trial with the best so far; the stop rule lives here too."""

    def __init__(self, label: str, settings: TuneSettings, n_space: int, out=sys.stderr):
        self.label, self.settings, self.n_space, self.out = label, settings, n_space, out
        self.cap = 10 * (settings.trials or n_space) + n_space  # against endless duplicates

    def __call__(self, study, trial) -> None:
        trials = study.get_trials(deepcopy=False)
        n_meas = sum(_is_measured(t) for t in trials)
        tried = {_params(t) for t in trials if t.state in FINISHED}
        best = best_trial(study)
        a = trial.user_attrs
        what = (f"{trial.value:.2f} us" if trial.state == TrialState.COMPLETE
                else a.get("rejected") or a.get("fail") or a.get("skipped") or trial.state.name)
        if "duplicate_of" in a:
            what = f"= #{a['duplicate_of']}"
        budget = self.settings.trials if self.settings.sampler == "tpe" else self.n_space
        line = (f"[{self.label}] #{trial.number} {config_label(trial.params)}: {what} | best "
                f"{f'{best.value:.2f} us (#{best.number})' if best else '-'} | {n_meas}/{budget} measured")
        if self.out is not None:
            print(line[:240], file=self.out, flush=True)
        done = self.settings.sampler == "tpe" and self.settings.trials is not None and n_meas >= self.settings.trials
        if done or len(tried) >= self.n_space or len(trials) >= self.cap:
            study.stop()


def split_seeds(spec: KernelSpec, default: Config, space: dict) -> list[Config]:
    """The default config with a quarter, half and twice its split count (those in the space
    and valid), measured right after the default. The default's split rule counts programs,
    not the resident ones nor the split-K partials' traffic, and a sampler with a small budget
    easily misses the split count that wins (H200, fp8 T=16 H=128: the default's 16 splits
    104 us, 4 splits 69 us)."""
    out = []
    for s in (default.num_splits // 4, default.num_splits // 2, default.num_splits * 2):
        c = replace(default, num_splits=s)
        if s >= 1 and s in space["num_splits"] and not static_reason(spec, c) and c not in out:
            out.append(c)
    return out


def gluon_seeds(spec: KernelSpec, bucket: int, space: dict) -> list[Config]:
    """Where the space holds the Gluon kernel (sm90): its tilings at the split count that makes about two
    waves of their programs, half and twice it, measured after the other seeds. The wide kernel (64 heads a
    program) where the space reaches 64 heads; the narrow one (16 or 32 heads a program as wgmma's N, with
    16 also one stage, two programs per SM) up to 32 heads, and at T=1 (H200: 16-head programs won every
    T=1 row with 64 or 128 heads, session 16). The sampler goes on from whichever wins."""
    if True not in space.get("gluon", ()):
        return []
    tilings = [(64, 8, 2)] if 64 in space["block_h"] else []
    if spec.num_heads <= 32 or bucket == 1:
        tilings += [(16, 8, 2), (16, 8, 1)] + ([(32, 8, 2)] if spec.num_heads > 16 else [])
    out = []
    for block_h, warps, stages in tilings:
        s = filling_splits(spec, bucket, block_h, ARCHS[spec.arch].num_sms)
        for n in sorted({max(1, s // 2), s, 2 * s}):
            c = Config(block_h, 64, n, warps, stages, gluon=True)
            if in_space(c, space) and not static_reason(spec, c) and c not in out:
                out.append(c)
    return out


def in_space(config: Config, space: dict) -> bool:
    """Whether the sampler could propose ``config`` (a field the space does not search must
    keep its Config default)."""
    return all(getattr(config, p) in space[p] if p in space else getattr(config, p) == getattr(_DEFAULTS, p)
               for p in PARAMS)


def incumbent_seeds(spec: KernelSpec, space: dict, incumbent: Config | None) -> list[Config]:
    """The config the table already holds for this bucket and its twins with one on/off field
    flipped (newest field first), measured right after the default. A re-tune after a template
    change or a new searched field (p_exchange, l2_prefetch) then starts from what won before
    instead of from scratch."""
    if incumbent is None:
        return []
    if "gluon" not in space:  # (a space without the Gluon kernel: its entry seeds the same tiling in Triton)
        incumbent = replace(incumbent, gluon=False)
    cands = [incumbent]
    for p in reversed(ON_OFF):
        others = [v for v in space.get(p, ()) if v != getattr(incumbent, p)]
        if len(space.get(p, ())) == 2 and others:
            cands.append(replace(incumbent, **{p: others[0]}))
    if "gluon" in space:  # the same tiling in the other kernel, where it is one of its tilings
        cands.append(replace(incumbent, gluon=not incumbent.gluon))
    return [c for c in cands if in_space(c, space) and not static_reason(spec, c)]


def prepare_study(spec: KernelSpec, bucket: int, storage, gpu: str, settings: TuneSettings,
                  worker: int = 0, stale_after: float | None = None, incumbent: Config | None = None):
    """Create or load the study; enqueue the default first, then the seeds (``incumbent_seeds``,
    ``split_seeds``, ``gluon_seeds``); fail trials left RUNNING by a run that died (older than
    ``stale_after`` s, default 2 x timeout + 10 min)."""
    space = study_space(spec, settings)
    default = study_default(spec, bucket, settings)
    study = optuna.create_study(study_name=study_name(spec, bucket, gpu), storage=storage,
                                direction="minimize", load_if_exists=True,
                                sampler=make_sampler(settings.sampler, space, settings.seed + worker,
                                                     settings.trials))
    trials = study.get_trials(deepcopy=False)
    if not trials:
        study.enqueue_trial(default.to_dict(), user_attrs={"baseline": True})
        if incumbent is not None:  # what the run's entry replaces (study_entry reports its time here)
            study.set_user_attr("incumbent", incumbent.to_dict())
    if settings.sampler != "grid" and not any(t.user_attrs.get("seed") for t in trials):  # also on resume
        seeds = [default]
        for cfg in (incumbent_seeds(spec, space, incumbent) + split_seeds(spec, default, space)
                    + gluon_seeds(spec, bucket, space)):
            if cfg not in seeds:
                seeds.append(cfg)
                study.enqueue_trial(cfg.to_dict(), user_attrs={"seed": True})
    stale = stale_after if stale_after is not None else 2 * settings.timeout + 600
    now = datetime.datetime.now()
    for t in trials:
        if t.state == TrialState.RUNNING and t.datetime_start and (now - t.datetime_start).total_seconds() > stale:
            # No heartbeat in journal storage: mark it so it neither blocks a grid nor counts.
            study._storage.set_trial_user_attr(t._trial_id, "interrupted", True)
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    return study


def run_study(spec: KernelSpec, bucket: int, measure: Callable, *, storage=None, gpu: str = "cpu",
              settings: TuneSettings = TuneSettings(), constraint: CompileConstraint | None = None,
              worker: int = 0, out=sys.stderr, warm: Callable | None = None):
    """Run (or resume) the study of ``spec`` at ``bucket`` until its budget is met;
    ``settings.parallel`` trials at a time (``warm(spec, config)`` precompiles each)."""
    storage = open_storage(storage, gpu)
    space = study_space(spec, settings)
    own = constraint is None
    constraint = constraint or CompileConstraint(settings.max_spill)
    # Each worker samples with its own seed, so parallel workers do not propose alike.
    study = prepare_study(spec, bucket, storage, gpu, settings, worker)
    if settings.sampler == "grid" and settings.trials != 0:
        constraint.precompile(spec, all_configs(space), jobs=os.cpu_count() or 1)
    n_meas = len(measured_trials(study))
    tried = {_params(t) for t in study.get_trials(deepcopy=False) if t.state in FINISHED}
    budget_left = settings.sampler == "grid" or settings.trials is None or n_meas < settings.trials
    try:
        if budget_left and len(tried) < space_size(space):
            budget = settings.trials if settings.sampler == "tpe" else None
            progress = Progress(f"{spec.key} T={bucket}", settings, space_size(space), out)
            study.optimize(Objective(spec, bucket, measure, constraint, space, warm, budget), callbacks=[progress],
                           n_trials=progress.cap, gc_after_trial=False, n_jobs=max(1, settings.parallel))
        confirm_finalists(study, spec, bucket, measure, settings.confirm_top, settings.confirm_repeats, warm)
    finally:
        if own:
            constraint.close()
    return study


def config_time(study, config: Config | None) -> float | None:
    """``config``'s time in ``study`` (``trial_time``; None where it was not timed correctly)."""
    conf = _confirmations(study)
    times = [trial_time(t, conf) for t in _correct_trials(study) if trial_config(t) == config]
    return min(times) if times and math.isfinite(min(times)) else None


def study_entry(study, bucket: int, compare: dict | None = None) -> TunedEntry | None:
    """The table entry of a finished study (None when no config was correct)."""
    best = best_trial(study)
    if best is None:
        return None
    cfg = trial_config(best)
    time_us = trial_time(best, _confirmations(study))
    fi = (compare or {}).get("flashinfer_us")
    ours = (compare or {}).get("triton_bench_us")
    backend = "flashinfer" if fi is not None and ours is not None and fi < ours else "triton"
    base = [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get("baseline")]
    default_us = base[0].user_attrs.get("time_us") if base else None
    inc = study.user_attrs.get("incumbent")
    incumbent = Config.from_dict(inc) if inc else None
    return TunedEntry(cfg, bucket, backend, time_us, fi, len(measured_trials(study)), today(), "tuned", ours,
                      default_us, incumbent, config_time(study, incumbent))


# ---------------------------------------------------------------- static tables

def static_config(spec: KernelSpec, num_tokens: int, constraint: CompileConstraint,
                  max_tries: int = 12) -> tuple[Config | None, str]:
    """The default config if it compiles within the arch's limits, else the nearest that does
    (fewer stages, then a smaller KV tile, then a smaller head tile; same splits). If all of
    those spill, the first that fits anyway: spilling is slow, not wrong."""
    d = default_config(spec, num_tokens)
    space = search_space(spec)
    cands = [c for c in all_configs(space) if c.num_splits == d.num_splits
             and all(getattr(c, p) == getattr(d, p) for p in ON_OFF + ("gluon",))  # the default's features
             and c.block_h <= d.block_h
             and c.block_n <= d.block_n and c.num_stages <= d.num_stages]
    cands.sort(key=lambda c: (d.block_h // c.block_h, d.block_n // c.block_n, d.num_stages - c.num_stages,
                              c.num_warps != d.num_warps))
    cands = cands[:max_tries]
    for max_spill in (None, 1 << 30):
        for c in cands:
            why = constraint.reason(spec, c, max_spill=max_spill)
            if not why:
                return c, ""
    return None, why


def static_entries(arch: str, constraint: CompileConstraint, specs=None, jobs: int = 1,
                   out=sys.stderr) -> tuple[dict, list[str]]:
    """Compile-checked (unmeasured) entries for the suite on ``arch``; also the rows left out."""
    specs = specs if specs is not None else suite_specs(arch)
    for spec, buckets in specs:  # the defaults first, in parallel
        constraint.precompile(spec, {default_config(spec, b) for b in buckets}, jobs=jobs)
    entries, missing = {}, []
    for spec, buckets in specs:
        for b in buckets:
            cfg, why = static_config(spec, b, constraint)
            if cfg is None:
                missing.append(f"{spec.key} T={b}: {why}")
                if out is not None:
                    print(f"[static] {spec.key} T={b}: no config fits: {why}", file=out)
                continue
            entries.setdefault(spec.key, {})[b] = TunedEntry(cfg, b, "triton", None, None, 0, today(), "static")
    return entries, missing


# ---------------------------------------------------------------- GPU driver and CLI

def _visible_gpus() -> list[str]:
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env:
        return [g.strip() for g in env.split(",") if g.strip()]
    import torch
    return [str(i) for i in range(torch.cuda.device_count())]


def _worker(jobs: list, storage, gpu: str, settings: TuneSettings, index: int, device: str) -> None:
    """One worker process: CUDA_VISIBLE_DEVICES is set before anything touches CUDA."""
    os.environ["CUDA_VISIBLE_DEVICES"] = device
    from .gpu_measure import GpuMeasurer
    measure, constraint = GpuMeasurer(settings.timeout), CompileConstraint(settings.max_spill, jobs=settings.parallel)
    warm = _warmer(settings)
    try:
        for key, bucket in jobs:
            run_study(KernelSpec.from_key(key), bucket, measure, storage=storage, gpu=gpu,
                      settings=settings, constraint=constraint, worker=index, warm=warm)
    finally:
        measure.close()
        constraint.close()
        if warm is not None:
            warm.close()


def _warmer(settings: TuneSettings):
    """Parallel JIT warm-up when trials run in parallel (compiling is most of a trial's time)."""
    if settings.parallel <= 1:
        return None
    from .gpu_measure import JitWarmer
    return JitWarmer(settings.parallel, timeout=2 * settings.timeout)


def seed_entry(gpu: str, spec: KernelSpec, bucket: int, held: dict) -> TunedEntry | None:
    """The entry a study of ``gpu``'s is seeded with: its own table's, else its first stand-in's with one
    (``tuned_table.stand_in_gpus``); tables of any software (each seed is measured again). ``held`` caches the
    tables read, by GPU."""
    for table_gpu in (gpu, *stand_in_gpus(gpu, spec.arch)):
        if table_gpu not in held:
            held[table_gpu] = load_tables(table_gpu, check_provenance=False)
        entry = held[table_gpu].get(spec.key, {}).get(bucket)
        if entry is not None:
            return entry
    return None


def tune_gpu(specs, settings: TuneSettings, *, storage=None, workers: int = 1, out_dir: Path,
             gpu: str | None = None) -> Path:
    """Tune ``specs`` [(spec, buckets)] on the visible GPUs and write the table."""
    import torch
    from multiprocessing import get_context

    from .gpu_measure import GpuMeasurer
    from .tuned_table import device_provenance
    dev = torch.device("cuda", 0)
    gpu = gpu or gpu_dirname(torch.cuda.get_device_name(dev))
    storage_arg = storage
    storage = open_storage(storage, gpu)
    jobs = [(spec.key, b) for spec, buckets in specs for b in buckets]
    constraint = CompileConstraint(settings.max_spill, jobs=settings.parallel)
    # Seeds from the tables, also those of other software (a new template, Triton): each seed is
    # measured again; session 7 lost its incumbents when the template hash changed. A GPU without an
    # entry of its own is seeded from its stand-ins' (an H100 from the H200's winners, an H800 from the H100's).
    held: dict = {}
    for key, b in jobs:  # before any worker starts: enqueue defaults and seeds, clear stale trials
        spec = KernelSpec.from_key(key)
        entry = seed_entry(gpu, spec, b, held)
        prepare_study(spec, b, storage, gpu, settings, incumbent=entry.config if entry else None)
        if settings.sampler == "grid":  # every worker then finds the reports in the cache file
            constraint.precompile(spec, all_configs(study_space(spec, settings)), jobs=os.cpu_count() or 1)
    constraint.close()  # its compile processes are idle from here; reopened on demand
    visible = _visible_gpus()
    n = len(visible) if workers <= 0 else min(workers, len(visible))
    if n > 1:
        ctx = get_context("spawn")
        procs = [ctx.Process(target=_worker, args=(jobs, storage_arg, gpu, settings, i, visible[i]))
                 for i in range(n)]
        saved = os.environ.get("CUDA_VISIBLE_DEVICES")
        try:
            for p, dev_id in zip(procs, visible):
                os.environ["CUDA_VISIBLE_DEVICES"] = dev_id  # inherited by the spawned worker
                p.start()
        finally:
            if saved is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = saved
        for p in procs:
            p.join()
    measure = GpuMeasurer(settings.timeout)
    warm = _warmer(settings) if n <= 1 else None
    path = Path(out_dir) / gpu / "sparse_mla.json"
    prov = {**device_provenance(dev), **software_provenance()}
    try:
        for key, b in jobs:
            spec = KernelSpec.from_key(key)
            if n > 1:
                study = optuna.load_study(study_name=study_name(spec, b, gpu), storage=storage)
            else:
                study = run_study(spec, b, measure, storage=storage, gpu=gpu, settings=settings,
                                  constraint=constraint, warm=warm)
            entry = study_entry(study, b)
            if entry is None:
                print(f"[{key} T={b}] no correct config: nothing written", file=sys.stderr)
                continue
            write_table(path, gpu, {key: {b: entry}}, prov)  # kept if the comparison is cut off
            cmp = measure.compare(spec, entry.config, b)
            entry = study_entry(study, b, cmp)
            write_table(path, gpu, {key: {b: entry}}, prov)
            was = ("" if entry.incumbent is None else f", the tables' {config_label(entry.incumbent)} "
                   + (f"{entry.incumbent_time_us:.2f} us" if entry.incumbent_time_us else "not timed"))
            print(f"[{key} T={b}] best {config_label(entry.config.to_dict())} {entry.time_us:.2f} us{was} "
                  f"(do_bench {entry.triton_bench_us}, FlashInfer {entry.flashinfer_time_us}"
                  f"{'' if not cmp or not cmp.get('flashinfer_error') else ': ' + cmp['flashinfer_error']}), "
                  f"backend {entry.backend} -> {path}", file=sys.stderr)
    finally:
        measure.close()
        constraint.close()
        if warm is not None:
            warm.close()
    return path


def _suite_specs(ap, arch, args):
    """The suite's specs that --formats, --heads and --tokens pick; a bucket outside the tuned ones is a usage
    error."""
    try:
        return suite_specs(arch, args.formats, args.heads, args.tokens)
    except ValueError as e:
        ap.error(str(e))


def tune_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="sparsemla tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", type=format_list, default=None, help="comma list of " + ",".join(SUITE_FORMATS))
    ap.add_argument("--heads", type=positive_int_list, default=None, help="comma list of H (default the suite's)")
    ap.add_argument("--tokens", type=positive_int_list, default=None,
                    help="comma list of T buckets (default the suite's)")
    ap.add_argument("--trials", type=int, default=48, help="measured configs per study (TPE)")
    ap.add_argument("--sampler", choices=("tpe", "grid"), default="tpe")
    ap.add_argument("--storage", default=None, help="RDB URL or journal file (default per GPU in the cache dir)")
    ap.add_argument("--workers", type=int, default=1, help="worker processes, one per visible GPU (0: all)")
    ap.add_argument("--ship", action="store_true", help="write into the package's tuned/ (to commit)")
    ap.add_argument("--out", default=None, help="tables root (default the user dir; see --ship)")
    ap.add_argument("--static", action="store_true", help="compile-checked defaults, no GPU (with --arch)")
    ap.add_argument("--arch", choices=tuple(ARCHS), default=None)
    ap.add_argument("--gpu", default=None, help="table folder name (default from the device / --arch)")
    ap.add_argument("--max-spill", type=int, default=0, help="reject configs spilling more bytes")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one measurement may take")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--confirm", type=int, default=TuneSettings.confirm_top,
                    help="fastest configs measured twice more at the end, ranked by median (0: off)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compile processes")
    ap.add_argument("--parallel", type=int, default=4,
                    help="trials in flight per GPU: compiled in parallel, measured one at a time")
    args = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    out_dir = Path(args.out) if args.out else (package_dir() if args.ship else user_dir())
    settings = TuneSettings(None if args.sampler == "grid" else args.trials, args.sampler, args.seed,
                            args.max_spill, args.timeout, max(1, args.parallel), confirm_top=max(0, args.confirm))
    if args.static:
        if not args.arch:
            ap.error("--static needs --arch")
        gpu = args.gpu or STATIC_GPUS.get(args.arch)
        if gpu is None:
            ap.error(f"--static --arch {args.arch}: give --gpu (no default GPU for this arch)")
        specs = _suite_specs(ap, args.arch, args)
        t0 = time.time()
        constraint = CompileConstraint(args.max_spill)
        try:
            entries, missing = static_entries(args.arch, constraint, specs, jobs=args.jobs)
        finally:
            constraint.close()
        prov = dict(gpu_name=gpu.replace("_", " "), compute_capability=f"{ARCHS[args.arch].cc // 10}."
                    f"{ARCHS[args.arch].cc % 10}", driver=None, **software_provenance())
        path = write_table(out_dir / gpu / "sparse_mla.json", gpu, entries, prov)
        n = sum(len(b) for b in entries.values())
        print(f"{path}: {n} static entries, {len(missing)} rows without a fitting config "
              f"({time.time() - t0:.0f} s)")
        return 1 if missing else 0
    import torch
    if not torch.cuda.is_available():
        print("sparsemla tune needs a CUDA GPU (or --static --arch ARCH)", file=sys.stderr)
        return 2
    from sparsemla.runtime.api import device_arch
    arch = device_arch(torch.device("cuda", 0))
    if args.arch and args.arch != arch:
        ap.error(f"--arch {args.arch} but the GPU is {arch}")
    specs = _suite_specs(ap, arch, args)
    path = tune_gpu(specs, settings, storage=args.storage, workers=args.workers, out_dir=out_dir, gpu=args.gpu)
    print(path)
    return 0
