"""The tuner on the CPU: search space, compile constraint, failures, resume, samplers, buckets,
tuned tables and dispatch. A deterministic fake stands in for the GPU measurement."""
import os

os.environ["TRITON_INTERPRET"] = "1"

import json  # noqa: E402
from dataclasses import replace  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import optuna  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import sparsemla  # noqa: E402
from sparsemla.gen import tuned_table  # noqa: E402
from sparsemla.gen.compile_check import CompileReport  # noqa: E402
from sparsemla.gen.gpu_measure import GpuMeasurer, Measurement, check, make_inputs  # noqa: E402
from sparsemla.gen.search_space import CompileConstraint, all_configs, search_space, static_reason  # noqa: E402
from sparsemla.gen.spec import ARCHS, Config, KernelSpec, default_config  # noqa: E402
from sparsemla.gen.suite import suite_specs  # noqa: E402
from sparsemla.gen.tune import (TuneSettings, best_trial, in_space, measured_trials, prepare_study,  # noqa: E402
                                run_study, seed_entry, static_entries, study_entry, study_space, trial_config)
from sparsemla.gen.tuned_table import (BUCKETS, TunedEntry, bucket_for, gpu_dirname, load_table,  # noqa: E402
                                       software_provenance, write_table)
from sparsemla.runtime import dispatch  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
SPEC = KernelSpec(arch="sm120", num_heads=16)  # space: 1 x 4 x 7 x 2 x 3 x 2 = 336 configs


def fake_compile(spec, cfg, arch):
    """Shared memory grows with the KV tile and the stages; nothing spills."""
    smem = (cfg.block_n * cfg.num_stages + cfg.block_h) * spec.d_qk * 2
    return CompileReport(spec.key, cfg, arch, True, smem, 128, 0)


def fake_time(cfg: Config) -> float:
    """A smooth landscape with one optimum (n64 s8 w8 st1) and interactions."""
    return (10 + 3 * abs(math.log2(cfg.block_n / 64)) + 2 * abs(math.log2(cfg.num_splits / 8))
            + 1.5 * (cfg.num_warps != 8) + 0.7 * abs(cfg.num_stages - 1)
            + 0.5 * (cfg.block_n == 64 and cfg.num_warps == 4))


def fake_measure(spec, cfg, T):
    return Measurement(fake_time(cfg), 1e-3, True)


def constraint():
    return CompileConstraint(0, fake_compile, path=None)


def run(measure=fake_measure, trials=12, sampler="tpe", storage=None, seed=0):
    return run_study(SPEC, 4, measure, storage=storage or optuna.storages.InMemoryStorage(),
                     settings=TuneSettings(trials, sampler, seed), constraint=constraint(), out=None)


# ---------------------------------------------------------------- search space and constraint

def test_search_space_per_arch():
    assert [ARCHS[a].max_stages for a in ("sm90", "sm120", "sm121")] == [4, 3, 3]
    for arch in ("sm90", "sm120", "sm121"):
        for H in (16, 32, 128):
            spec = KernelSpec(arch=arch, num_heads=H, topk=2048)
            sp = search_space(spec)
            assert sp["num_warps"] == [4, 8] and sp["num_stages"] == list(range(1, ARCHS[arch].max_stages + 1))
            assert sp["index_prefetch"] == [False, True]
            # d_v = 512: a 128-head fp32 accumulator cannot live in registers; the Gluon kernel (sm90) also
            # runs 32 heads in its 64-head programs
            assert sp["block_h"] == [b for b in (16, 32, 64) if b <= max(16, H) or (arch, H, b) == ("sm90", 32, 64)]
            assert sp["block_n"] == [16, 32, 64, 128]
            assert sp["num_splits"] == [1, 2, 4, 8, 16, 32, 64]
            for T in (1, 64, 4096):
                d = default_config(spec, T).to_dict()
                assert all(d[k] in sp[k] for k in sp), (arch, H, T)
            # p_exchange splits a 64-head tile across 2 warp groups: searched only where one exists
            assert sp.get("p_exchange") == ([False, True] if H > 32 else None), (arch, H)
    assert "only adds traffic" in static_reason(KernelSpec(num_heads=128), Config(32, 64, 1, 8, 2, p_exchange=True))
    assert "only adds traffic" in static_reason(KernelSpec(num_heads=128), Config(64, 64, 1, 4, 2, p_exchange=True))
    assert static_reason(KernelSpec(num_heads=128), Config(64, 64, 1, 8, 2, p_exchange=True)) == ""
    assert "only adds padding" in static_reason(KernelSpec(num_heads=32), Config(64, 64, 1, 8, 2))
    assert static_reason(KernelSpec(num_heads=32, kv_format="fp8_e4m3"), Config(64, 64, 8, 8, 2, gluon=True)) == ""
    narrow = search_space(KernelSpec(kv_format="auto", d_qk=128, d_v=128, num_heads=128))
    assert narrow["block_h"] == [16, 32, 64, 128]
    small = search_space(KernelSpec(arch="sm90", num_heads=16, topk=64))
    assert small["num_splits"] == [1, 2, 4] and small["block_n"] == [16, 32, 64]
    assert "fewer than block_n" in static_reason(KernelSpec(topk=64), Config(64, 64, 2, 8, 2))


def test_every_shipped_entry_can_seed_a_study():
    # A GPU's own run seeds each study with the reference part's entry (an H100 the H200's), a re-tune with
    # the GPU's own. An entry the sampler cannot propose cannot be seeded, so it is never timed against the
    # run's winner (the H200's 64-head Gluon programs for 32 heads were not, on an H100, before session 54).
    seen = 0
    for path in sorted(tuned_table.package_dir().glob("*/sparse_mla.json")):
        for key, buckets in json.loads(path.read_text())["entries"].items():
            spec = KernelSpec.from_key(key)
            for bucket, e in buckets.items():
                cfg = Config.from_dict(e["config"])
                assert in_space(cfg, study_space(spec, TuneSettings())), (path.parent.name, key, bucket, cfg)
                assert static_reason(spec, cfg) == "", (path.parent.name, key, bucket, cfg)
                seen += 1
    assert seen >= 500


def test_constraint_rejects_and_caches(tmp_path):
    calls = []

    def fake(spec, cfg, arch):
        calls.append(cfg)
        if cfg.num_warps == 16:
            return CompileReport(spec.key, cfg, arch, False, error="CompilationError: out of resources\nmore")
        return CompileReport(spec.key, cfg, arch, True, 1000 * cfg.block_n, 200, 64 * (cfg.num_stages == 3))

    spec = KernelSpec(arch="sm90", num_heads=16)
    path = tmp_path / "compile.json"
    c = CompileConstraint(0, fake, path)
    assert c.reason(spec, Config(16, 32, 1, 8, 2)) == ""
    assert c.reason(spec, Config(16, 256, 1, 8, 2)).startswith("shared memory 256000 B > 232448 B")
    assert c.reason(spec, Config(16, 32, 1, 8, 3)).startswith("spills 64 B > max_spill 0 B")
    assert c.reason(spec, Config(16, 32, 1, 8, 3), max_spill=64) == ""
    assert c.reason(spec, Config(16, 32, 1, 16, 2)) == "compile failed: CompilationError: out of resources"
    assert len(calls) == 4  # the max_spill=64 query reused the cached report
    c2 = CompileConstraint(0, lambda *a: pytest.fail("should come from the cache file"), path)
    assert c2.reason(spec, Config(16, 256, 1, 8, 2)).startswith("shared memory")
    assert not list(tmp_path.glob("*.tmp"))
    path.write_text("{not json")  # a broken cache file is reported and replaced, never fatal
    assert CompileConstraint(0, fake, path).reason(spec, Config(16, 32, 1, 8, 2)) == ""
    assert json.loads(path.read_text())


def test_real_compile_for_arch(tmp_path):
    spec = KernelSpec(arch="sm120", num_heads=16)
    c = CompileConstraint(0, None, tmp_path / "compile.json")
    try:
        rep = c.report(spec, Config(16, 32, 1, 4, 2))
        assert rep["ok"], rep["error"]
        assert 0 < rep["shared_bytes"] <= ARCHS["sm120"].smem_bytes
        assert c.reason(spec, Config(16, 32, 1, 4, 2), max_spill=1 << 20) == ""
    finally:
        c.close()


# ---------------------------------------------------------------- studies

def test_failed_trials_are_never_selected():
    def measure(spec, cfg, T):
        if cfg.num_stages == 2:
            raise RuntimeError("illegal memory access")
        t = fake_time(cfg)
        if cfg.num_warps == 8:  # the fastest half of the space is wrong
            return Measurement(t / 10, 0.5, False, "relative error 0.5 > 0.02")
        return Measurement(t, 1e-3, True)

    study = run(measure, trials=20)
    states = {t.state for t in study.trials}
    assert optuna.trial.TrialState.FAIL in states
    for t in study.trials:
        if t.params.get("num_warps") == 8 or t.params.get("num_stages") == 2:
            assert t.state in (optuna.trial.TrialState.FAIL, optuna.trial.TrialState.PRUNED)
            if t.state == optuna.trial.TrialState.FAIL:
                assert "fail" in t.user_attrs
    best = best_trial(study)
    assert best.params["num_warps"] == 4 and best.params["num_stages"] != 2
    entry = study_entry(study, 4)
    assert entry.config.num_warps == 4 and entry.time_us == best.value and entry.backend == "triton"
    faster_fi = study_entry(study, 4, dict(triton_bench_us=20.0, flashinfer_us=15.0))
    assert faster_fi.backend == "flashinfer" and faster_fi.triton_bench_us == 20.0
    assert study_entry(study, 4, dict(triton_bench_us=20.0, flashinfer_us=None)).backend == "triton"
    # the default (n32 s32 w4 st2) raised: it is a failure, not a candidate
    assert study.trials[0].user_attrs.get("baseline") and study.trials[0].state == optuna.trial.TrialState.FAIL
    everything_wrong = run(lambda s, c, T: Measurement(1.0, math.nan, False, "NaN"), trials=5)
    assert best_trial(everything_wrong) is None and study_entry(everything_wrong, 4) is None


def test_resume_from_journal(tmp_path):
    journal = str(tmp_path / "tune.journal")
    s1 = run(trials=5, storage=journal)
    assert len(measured_trials(s1)) == 5
    best1 = best_trial(s1).value
    s2 = run(trials=10, storage=journal)  # re-opened from the file
    assert s2.study_name == s1.study_name
    meas = measured_trials(s2)
    assert len(meas) == 10 and len({tuple(t.params.values()) for t in meas}) == 10
    assert best_trial(s2).value == min(t.value for t in meas) <= best1
    assert sum(bool(t.user_attrs.get("baseline")) for t in s2.trials) == 1
    # a trial left RUNNING by a dead run is failed, not counted, when the study reopens
    s2.ask()
    s3 = prepare_study(SPEC, 4, s2._storage, "cpu", TuneSettings(10), stale_after=0)
    assert s3.trials[-1].state == optuna.trial.TrialState.FAIL and s3.trials[-1].user_attrs["interrupted"]
    assert len(measured_trials(s3)) == 10


def test_split_neighbours_are_measured_after_the_default(tmp_path):
    from sparsemla.gen.tune import split_seeds
    d = default_config(SPEC, 4)  # n32 s32: the seeds are s8, s16 and s64 (32 slots per split)
    seeds = split_seeds(SPEC, d, search_space(SPEC))
    assert [c.num_splits for c in seeds] == [8, 16, 64]
    assert all(c == Config(**{**d.to_dict(), "num_splits": c.num_splits}) for c in seeds)
    journal = str(tmp_path / "tune.journal")
    study = run(trials=6, storage=journal)
    first = [Config(**t.params) for t in study.trials[:4]]
    assert first == [d] + seeds and all(t.user_attrs.get("seed") for t in study.trials[1:4])
    # a resumed study is not seeded twice
    again = run(trials=8, storage=journal)
    assert sum(bool(t.user_attrs.get("seed")) for t in again.trials) == 3


def test_the_incumbent_and_its_twins_are_measured_after_the_default(tmp_path):
    from sparsemla.gen.tune import incumbent_seeds, split_seeds
    spec = KernelSpec(arch="sm90", num_heads=128)
    space = search_space(spec)
    inc = Config(64, 64, 1, 8, 2)
    # newest field first: l2_prefetch, p_exchange, index_prefetch
    # (then the same tiling in the other kernel: the space holds the Gluon kernel on sm90)
    assert incumbent_seeds(spec, space, inc) == [inc, Config(64, 64, 1, 8, 2, l2_prefetch=2),
                                                 Config(64, 64, 1, 8, 2, False, True),
                                                 Config(64, 64, 1, 8, 2, True), replace(inc, gluon=True)]
    on = Config(64, 64, 1, 8, 2, l2_prefetch=2)
    assert incumbent_seeds(spec, space, on)[1] == Config(64, 64, 1, 8, 2)  # a feature on is turned off
    assert incumbent_seeds(spec, space, None) == []
    # a Gluon entry is measured again, then its tiling in Triton (its on/off twins are no Gluon tilings); a
    # Triton entry seeds its tiling in Gluon only where it is one; without the Gluon kernel in the space (sm120),
    # a Gluon entry seeds its tiling in Triton
    gl = Config(64, 64, 1, 8, 2, gluon=True)
    assert incumbent_seeds(spec, space, gl) == [gl, inc]
    assert not any(c.gluon for c in incumbent_seeds(spec, space, replace(inc, block_n=32)))
    sm120 = KernelSpec(arch="sm120", num_heads=16)
    assert incumbent_seeds(sm120, search_space(sm120), Config(16, 64, 1, 4, 2, gluon=True))[0] == \
        Config(16, 64, 1, 4, 2)
    # a twin the space or the static rule excludes is left out (p_exchange with 4 warps)
    w4 = Config(64, 64, 1, 4, 2)
    assert incumbent_seeds(spec, space, w4) == [w4, Config(64, 64, 1, 4, 2, l2_prefetch=2), Config(64, 64, 1, 4, 2, True)]
    # an incumbent outside the space is no seed (p_exchange is not searched with 16 heads)
    assert incumbent_seeds(SPEC, search_space(SPEC), Config(16, 64, 8, 8, 3, p_exchange=True)) == []
    # in a study: default, incumbent, its twins (minus any equal to the default), split seeds
    inc = Config(16, 64, 8, 8, 1)
    study = prepare_study(SPEC, 4, optuna.storages.InMemoryStorage(), "cpu", TuneSettings(10), incumbent=inc)
    d = default_config(SPEC, 4)
    queued = [Config(**t.system_attrs["fixed_params"]) for t in study.trials]
    assert queued == [d, inc, Config(16, 64, 8, 8, 1, l2_prefetch=2), Config(16, 64, 8, 8, 1, True)] + split_seeds(
        SPEC, d, search_space(SPEC))
    # and run: the seeds are measured first; the incumbent (the landscape's optimum) wins
    study = run_study(SPEC, 4, fake_measure, storage=study._storage, settings=TuneSettings(8),
                      constraint=constraint(), out=None)
    assert [trial_config(t) for t in study.trials[:len(queued)]] == queued
    assert trial_config(best_trial(study)).block_n == 64 and best_trial(study).value == fake_time(inc)
    # the entry names what it replaces, timed in the same study, and keeps it through a table file
    entry = study_entry(study, 4)
    assert entry.incumbent == inc and entry.incumbent_time_us == fake_time(inc)
    path = tmp_path / "t.json"
    write_table(path, "FAKE", {SPEC.key: {4: entry}}, software_provenance())
    got = load_table(path)[SPEC.key][4]
    assert got.incumbent == inc and got.incumbent_time_us == fake_time(inc)
    # an incumbent the study could not time (outside the space: no seed) is named, with no time
    out = Config(16, 64, 8, 8, 3, p_exchange=True)
    study = prepare_study(SPEC, 4, optuna.storages.InMemoryStorage(), "cpu", TuneSettings(4), incumbent=out)
    study = run_study(SPEC, 4, fake_measure, storage=study._storage, settings=TuneSettings(4),
                      constraint=constraint(), out=None)
    entry = study_entry(study, 4)
    assert entry.incumbent == out and entry.incumbent_time_us is None
    # tables written before session 54 have no incumbent: their entries read as None, and are written without one
    write_table(path, "FAKE", {SPEC.key: {4: _entry(inc, 4)}}, software_provenance())
    assert load_table(path)[SPEC.key][4].incumbent is None and "incumbent" not in path.read_text()


def test_the_gluon_kernel_is_searched_on_sm90():
    from sparsemla.gen.tune import gluon_seeds
    wide = KernelSpec(arch="sm90", num_heads=128)
    assert search_space(wide)["gluon"] == [False, True]
    fp8_16 = KernelSpec(arch="sm90", num_heads=16, kv_format="fp8_e4m3")
    assert search_space(fp8_16)["num_warps"] == [4, 8, 12]  # two dequantizing warp groups
    assert "12" in static_reason(fp8_16, Config(16, 64, 1, 12, 2))  # ... of the Gluon kernel only
    from sparsemla.gen.tune import study_space  # a study of the Triton kernel's fields keeps its old space
    assert study_space(fp8_16, TuneSettings(fields=("block_n", "num_warps")))["num_warps"] == [4, 8]
    assert study_space(fp8_16, TuneSettings(fields=("num_warps", "gluon")))["num_warps"] == [4, 8, 12]
    for spec in (KernelSpec(arch="sm120", num_heads=128), replace(wide, extra_topk=128), replace(wide, q_dtype="fp16")):
        assert "gluon" not in search_space(spec) and gluon_seeds(spec, 1, search_space(spec)) == []
    # Rejected before compiling: the space's other fields with the Gluon kernel's fixed tiling.
    assert "gluon=True" in static_reason(wide, Config(64, 32, 1, 8, 2, gluon=True))
    # Seeds: the wide kernel at about two waves of programs, half and twice that; 16 and 32 heads a program
    # too at T=1 (and always below 64 heads), 16 with one stage as well.
    assert gluon_seeds(wide, 128, search_space(wide)) == [Config(64, 64, n, 8, 2, gluon=True) for n in (1, 2, 4)]
    t1 = gluon_seeds(wide, 1, search_space(wide))
    assert {(c.block_h, c.num_stages) for c in t1} == {(64, 2), (16, 2), (16, 1), (32, 2)}
    assert [c.num_splits for c in t1 if c.block_h == 16 and c.num_stages == 1] == [16, 32]  # (64: < 64 keys)
    seeds = gluon_seeds(fp8_16, 256, search_space(fp8_16))
    assert seeds == [Config(16, 64, n, 8, st, gluon=True) for st in (2, 1) for n in (1, 2, 4)]
    for spec, b in ((wide, 1), (wide, 128), (fp8_16, 256)):
        assert all(not static_reason(spec, c) for c in gluon_seeds(spec, b, search_space(spec)))

    # A study where the Gluon kernel is faster ships it: its seeds are measured, and the winner keeps gluon=True.
    def measure(spec, cfg, T):
        return Measurement(fake_time(cfg) / (3 if cfg.gluon else 1), 1e-3, True)

    study = run_study(fp8_16, 256, measure, storage=optuna.storages.InMemoryStorage(),
                      settings=TuneSettings(12), constraint=constraint(), out=None)
    measured = [trial_config(t) for t in measured_trials(study)]
    assert all(c in measured for c in seeds)
    entry = study_entry(study, 256)
    assert entry.config.gluon and entry.config.block_h == 16 and not static_reason(fp8_16, entry.config)


def test_finalists_are_remeasured_and_ranked_by_median():
    # One lucky measurement must not win, nor a config that fails when measured again. The
    # grid measures everything once; the true optimum n64 s8 w8 st1 (10 us) exists twice
    # (index_prefetch does not change fake_time), the prefetch one fails when re-measured, and
    # n32 s8 w8 st1 (13 us) measures 9 us the first time.
    best_true, flaky = Config(16, 64, 8, 8, 1, False), Config(16, 64, 8, 8, 1, True)
    lucky, seen = Config(16, 32, 8, 8, 1, False), []

    def measure(spec, cfg, T):
        again = cfg in seen
        seen.append(cfg)
        if cfg == flaky and again:
            return Measurement(1.0, 0.5, False, "relative error 0.5")
        return Measurement(fake_time(cfg) - (4.0 if cfg == lucky and not again else 0.0), 1e-3, True)

    from sparsemla.gen.tune import _confirmations
    study = run_study(SPEC, 4, measure, storage=optuna.storages.InMemoryStorage(),
                      settings=TuneSettings(None, "grid", 0), constraint=constraint(), out=None)
    conf = _confirmations(study)
    finalists = {Config(**t.params) for t in study.trials if t.number in conf}
    assert finalists == {lucky, best_true, flaky} and all(len(v) == 2 for v in conf.values())
    assert seen[-6:] == seen[-6:-3] * 2  # interleaved re-measurements
    assert Config(**best_trial(study).params) == best_true
    assert study_entry(study, 4).time_us == pytest.approx(10.0)
    n = len(seen)
    run_study(SPEC, 4, measure, storage=study._storage, settings=TuneSettings(None, "grid", 0),
              constraint=constraint(), out=None)  # resumed: the grid is done, nothing left to confirm
    assert len(seen) == n and _confirmations(study) == conf


def test_tpe_vs_grid_on_fake_objective():
    grid = run(sampler="grid", trials=None)
    valid = [c for c in all_configs(search_space(SPEC)) if not constraint().reason(SPEC, c)]
    gm = measured_trials(grid)
    assert len(gm) == len(valid)  # exhaustive, each valid config measured once
    assert best_trial(grid).value == pytest.approx(min(map(fake_time, valid)))
    tpe = run(sampler="tpe", trials=len(gm) // 4)
    assert len(measured_trials(tpe)) <= len(gm) // 4
    assert best_trial(tpe).value <= 1.03 * best_trial(grid).value
    assert best_trial(tpe).value <= fake_time(default_config(SPEC, 4))  # never worse than the default


def test_a_study_restricted_to_some_fields_keeps_the_others_at_their_defaults():
    # (grid vs TPE on a grid measured before l2_prefetch existed: both search the grid's fields)
    from sparsemla.gen.tune import study_default, study_space
    spec = KernelSpec(arch="sm90", num_heads=16)
    fields = ("block_h", "block_n", "num_splits", "num_warps", "num_stages")
    settings = TuneSettings(10, "tpe", 0, fields=fields)
    assert set(study_space(spec, settings)) == set(fields)
    d, full = study_default(spec, 4, settings), default_config(spec, 4)
    assert full.l2_prefetch == 2 and d == Config(full.block_h, full.block_n, full.num_splits, full.num_warps,
                                                 full.num_stages)  # l2_prefetch back to Config's 0
    study = run_study(spec, 4, fake_measure, storage=optuna.storages.InMemoryStorage(), settings=settings,
                      constraint=constraint(), out=None)
    cfgs = [trial_config(t) for t in measured_trials(study)]
    assert cfgs[0] == d and len(cfgs) == 10 and len(set(map(repr, cfgs))) == 10
    assert all(not c.index_prefetch and not c.p_exchange and c.l2_prefetch == 0 for c in cfgs)


def _measured_with_slow_seeds(budget: int, slow: int, pause: float):
    """The study's seeds (default + 3 split seeds, in queue order) and the configs it measured, with 8 trials
    in flight, ``budget`` measurements, and the first ``slow`` seeds taking ``pause`` s to compile (the rest and
    the sampled configs none)."""
    from sparsemla.gen.tune import split_seeds
    d = default_config(SPEC, 4)
    seeds = [d] + split_seeds(SPEC, d, search_space(SPEC))

    def warm(spec, cfg):
        if cfg in seeds[:slow]:
            time.sleep(pause)
        return ""

    study = run_study(SPEC, 4, fake_measure, storage=optuna.storages.InMemoryStorage(),
                      settings=TuneSettings(budget, "tpe", 0, parallel=8, confirm_top=0), constraint=constraint(),
                      out=None, warm=warm)
    return seeds, sorted(map(repr, (trial_config(t) for t in measured_trials(study))))


def test_seeds_keep_their_place_in_a_small_budget_with_trials_in_flight():
    # The seeds compile slowly, sampled configs at once: with 8 in flight and a budget of 4, the
    # sampled ones used to fill the budget before the seeds (default + 3 split seeds) were warm.
    seeds, measured = _measured_with_slow_seeds(budget=4, slow=4, pause=0.2)
    assert len(seeds) == 4
    assert measured == sorted(map(repr, seeds))


def test_seeds_take_a_budget_smaller_than_their_count_in_queue_order():
    # The default and the first split seed compile slowly, the later seeds at once: with a budget of 2 the
    # later ones used to be measured first and fill it (as an H100's tuning run left its incumbent unmeasured).
    seeds, measured = _measured_with_slow_seeds(budget=2, slow=2, pause=0.3)
    assert measured == sorted(map(repr, seeds[:2]))


def test_parallel_trials_warm_concurrently_and_measure_one_at_a_time():
    import threading
    lock, warmed, overlaps = threading.Lock(), [], []
    busy = threading.Event()

    def warm(spec, cfg):
        with lock:
            warmed.append(cfg)
        time.sleep(0.01)
        return "warm-up: RuntimeError: boom" if cfg.num_stages == 3 else ""

    calls = []

    def measure(spec, cfg, T):
        if busy.is_set():
            overlaps.append(cfg)
        busy.set()
        calls.append(cfg)
        time.sleep(0.005)
        busy.clear()
        return fake_measure(spec, cfg, T)

    study = run_study(SPEC, 4, measure, storage=optuna.storages.InMemoryStorage(),
                      settings=TuneSettings(16, "tpe", 0, parallel=4), constraint=constraint(), out=None,
                      warm=warm)
    meas = measured_trials(study)
    # the budget is exact with trials in flight: a measurement that ended but whose value Optuna
    # has not recorded yet still counts; then the 3 fastest are measured twice more
    assert len(meas) == 16 and len(calls) == 16 + 3 * 2 and not overlaps
    assert calls[16:] == calls[16:19] * 2  # the finalists, interleaved
    assert len(warmed) >= len(meas)  # every measured config was warmed first
    noted = [t for t in meas if t.params["num_stages"] == 3]
    assert all("boom" in t.user_attrs["warm"] for t in noted)  # a warm-up failure is noted, not fatal
    entry = study_entry(study, 4)
    assert entry.default_time_us == pytest.approx(fake_time(default_config(SPEC, 4)))
    assert entry.time_us <= entry.default_time_us


def test_jit_warmer_runs_configs_in_worker_processes():
    from sparsemla.gen.gpu_measure import JitWarmer
    spec = KernelSpec(arch="sm90", num_heads=16, topk=64, compute_dtype="fp32")  # interpreter: no bf16 dot
    warm = JitWarmer(2, timeout=120, device="cpu")
    try:
        assert warm(spec, Config(16, 16, 2, 4, 1)) == ""
        assert warm(spec, Config(16, 16, 1, 4, 1)) == ""
        bad = warm(spec, Config(16, 16, 2, 3, 1))  # num_warps=3 is refused by Config.check
        assert bad.startswith("warm-up: ValueError") and "num_warps" in bad
    finally:
        warm.close()


def test_split_counts_share_one_compile_report():
    calls = []
    c = CompileConstraint(0, lambda spec, cfg, arch: calls.append(cfg) or fake_compile(spec, cfg, arch), None)
    for s in (2, 4, 8, 32):
        assert c.reason(SPEC, Config(16, 32, s, 4, 2)) == ""
    assert c.reason(SPEC, Config(16, 32, 1, 4, 2)) == ""
    assert [x.num_splits for x in calls] == [2, 1]


def test_bucket_for():
    assert BUCKETS == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
    assert [bucket_for(t, BUCKETS) for t in (0, 1, 2, 3, 5, 4095, 4096, 10 ** 6)] == \
        [1, 1, 2, 2, 4, 2048, 4096, 4096]
    assert [bucket_for(t, (4, 16)) for t in (1, 4, 5, 16, 100)] == [4, 4, 4, 16, 16]


def test_suite_specs_tokens():
    # the suite's buckets, a bucket outside them (issue 7's T = 32), prefill only where it is run
    assert [(s.num_heads, t) for s, t in suite_specs("sm90", ["bf16"], [16, 128])] == \
        [(16, (1, 4, 16, 64, 128, 256)), (128, (1, 4, 16, 64, 128, 256, 4096))]
    assert [(s.num_heads, t) for s, t in suite_specs("sm90", ["fp8"], [16, 128], [32, 4096, 1])] == \
        [(16, (1, 32)), (128, (1, 32, 4096))]
    for bad in ([3], [0], [8192]):
        with pytest.raises(ValueError, match="powers of two"):
            suite_specs("sm90", ["bf16"], [128], bad)


# ---------------------------------------------------------------- tables and dispatch

def test_gpu_dirname_aliases():
    for name in ("NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H200 SXM 141GB", "  NVIDIA  H200  NVL "):
        assert gpu_dirname(name) == "NVIDIA_H200"
    assert gpu_dirname("NVIDIA GH200 480GB") == "NVIDIA_GH200"
    assert gpu_dirname("NVIDIA H100 80GB HBM3") == "NVIDIA_H100_80GB_HBM3"
    assert gpu_dirname("NVIDIA RTX PRO 6000 Blackwell Workstation Edition") == "NVIDIA_RTX_PRO_6000_Blackwell"


def _entry(cfg, b, backend="triton"):
    return TunedEntry(cfg, b, backend, 12.5, None, 30, "2026-12-02", "tuned")


def test_tuned_file_validation(tmp_path, caplog, monkeypatch):
    prov = software_provenance()
    key = KernelSpec().key
    good = write_table(tmp_path / "good.json", "NVIDIA_H200", {key: {4: _entry(Config(), 4)}}, prov)
    assert load_table(good)[key][4].config == Config()
    assert not list(tmp_path.glob("*.tmp"))
    data = json.loads(good.read_text())
    bad = {
        "malformed": "{ this is not json",
        "provenance": json.dumps({**data, "provenance": {**prov, "template_hash": "0" * 16}}),
        "triton": json.dumps({**data, "provenance": {**prov, "triton": "2.0.0"}}),
        "missing": json.dumps({**data, "entries": {key: {"4": {"backend": "triton", "source": "tuned"}}}}),
        "badconfig": json.dumps({**data, "entries": {key: {"4": {**data["entries"][key]["4"],
                                                                "config": {"block_h": 3}}}}}),
        "nokeys": json.dumps({"version": 1}),
    }
    for name, text in bad.items():
        p = tmp_path / f"{name}.json"
        p.write_text(text)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparsemla"):
            assert load_table(p) == {} and load_table(p) == {}
        assert len(caplog.records) == 1, name  # reported once, then ignored quietly
        assert str(p) in caplog.text
    # The tuner's seeds also come from a table of other software (a new template): each is re-measured.
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    (tmp_path / "user" / "NVIDIA_H200").mkdir(parents=True)
    (tmp_path / "user" / "NVIDIA_H200" / "sparse_mla.json").write_text(bad["provenance"])
    assert tuned_table.load_tables("NVIDIA_H200") == {}
    assert tuned_table.load_tables("NVIDIA_H200", check_provenance=False)[key][4].config == Config()
    # atomic: a write that fails midway leaves the old file whole and no temporary behind
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        write_table(good, "NVIDIA_H200", {key: {8: _entry(Config(), 8)}}, prov)
    assert json.loads(good.read_text()) == data and not list(tmp_path.glob("*.tmp"))


def test_select_config_uses_tuned_table(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("SPARSEMLA_GPU", "NVIDIA H200 NVL")
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    spec = KernelSpec(arch="sm90", num_heads=64)
    c4, c64 = Config(64, 64, 4, 8, 3), Config(32, 16, 1, 4, 1)
    prov = software_provenance()
    write_table(tmp_path / "pkg" / "NVIDIA_H200" / "sparse_mla.json", "NVIDIA_H200",
                {spec.key: {4: _entry(Config(16, 16, 1, 4, 1), 4), 1024: _entry(c4, 1024)}}, prov)
    write_table(tmp_path / "user" / "NVIDIA_H200" / "sparse_mla.json", "NVIDIA_H200",
                {spec.key: {4: _entry(c4, 4), 64: _entry(c64, 64, "flashinfer")}}, prov)
    dispatch.clear_cache()
    try:
        cpu = torch.device("cpu")
        assert dispatch.select_config(spec, 5, cpu) == c4  # user dir wins over the package
        assert dispatch.select_config(spec, 1, cpu) == c4  # below every bucket: the smallest
        assert dispatch.select_config(spec, 100, cpu) == c64
        assert dispatch.select_config(spec, 5000, cpu) == c4  # the package's 1024 entry
        e = dispatch.lookup(spec, 64, cpu)
        assert e.backend == "flashinfer" and e.get("backend") == "flashinfer" and e.bucket == 64
        # a sink or LSE output changes only the epilogue: such a call runs the plain spec's entry,
        # unless the table has one of its own; an extra cache is other work (no entry: the default)
        sink_lse = replace(spec, has_sink=True, return_lse=True)
        assert dispatch.select_config(sink_lse, 100, cpu) == c64
        assert dispatch.select_config(replace(spec, return_lse=True), 5, cpu) == c4
        extra = replace(spec, has_sink=True, extra_topk=64)
        assert dispatch.lookup(extra, 100, cpu) is None
        assert dispatch.select_config(extra, 100, cpu) == default_config(extra, 100)
        # a head count without an entry runs the next tuned power of two's (the same head blocks)
        for h in (48, 40):
            assert dispatch.select_config(replace(spec, num_heads=h, has_sink=True), 100, cpu) == c64
        assert [(s.num_heads, s.page_size) for s in dispatch.stand_ins(replace(spec, num_heads=12), (1, 64))] \
            == [(12, 1), (12, 64), (16, 1), (16, 64), (32, 1), (32, 64), (64, 1), (64, 64), (128, 1), (128, 64),
                (256, 1), (256, 64)]
        # another page size (the table's is 1 here) runs the tuned page size's entry
        assert dispatch.select_config(replace(spec, page_size=64), 100, cpu) == c64
        assert dispatch.lookup(replace(spec, num_heads=65), 4, cpu) is None  # no tuned count above
        assert dispatch.select_config(replace(spec, num_heads=32), 100, cpu) == c64
        # another top-k length runs the tuned length's entry, its split count trimmed to what the list fills
        short = KernelSpec(arch="sm90", num_heads=32, topk=1024)
        assert dispatch.select_config(short, 4, cpu) == c4 and dispatch.select_config(short, 100, cpu) == c64
        assert dispatch.select_config(replace(short, topk=128), 4, cpu) == replace(c4, num_splits=2)
        assert [s.topk for s in dispatch.stand_ins(replace(short, num_heads=256), (), (512, 2048, 4096, 8192))] \
            == [1024, 512, 2048, 4096, 8192]  # (256 heads: one head count; the nearest length first)
        other = KernelSpec(arch="sm90", num_heads=32, kv_format="fp8_e4m3")  # no entry, nor a stand-in's
        assert dispatch.lookup(other, 4, cpu) is None
        assert dispatch.select_config(other, 4, cpu) == default_config(other, 4)
        t0 = time.perf_counter()
        for _ in range(1000):
            dispatch.select_config(spec, 100, cpu)
        assert time.perf_counter() - t0 < 0.5
    finally:
        dispatch.clear_cache()


def test_tables_of_another_triton_and_of_the_reference_part(tmp_path, monkeypatch, caplog):
    # A user on a newer torch (another Triton minor) and a GPU without a table of its own (an H100) both run
    # tuned configs, not untuned defaults: the other Triton's entries where this Triton's table has none, the
    # arch's reference part's (the H200's) where the GPU's own table has none.
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    spec = KernelSpec(arch="sm90", num_heads=64)
    c_old, c_new, c_h100 = Config(64, 64, 4, 8, 3), Config(32, 16, 1, 4, 1), Config(16, 16, 1, 4, 1)
    prov = software_provenance()
    h200 = tmp_path / "pkg" / "NVIDIA_H200" / "sparse_mla.json"
    write_table(h200, "NVIDIA_H200", {spec.key: {4: _entry(c_old, 4), 64: _entry(c_old, 64)}}, prov)
    data = json.loads(h200.read_text())
    h200.write_text(json.dumps({**data, "provenance": {**prov, "triton": "2.9.0"}}))
    write_table(tmp_path / "user" / "NVIDIA_H200" / "sparse_mla.json", "NVIDIA_H200",
                {spec.key: {64: _entry(c_new, 64)}}, prov)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sparsemla"):
        assert load_table(h200) == {}  # alone, still not this Triton's
        merged = tuned_table.load_tables("NVIDIA_H200")
        tuned_table.load_tables("NVIDIA_H200")
    assert merged[spec.key][4].config == c_old and merged[spec.key][64].config == c_new  # this Triton's first
    assert len(caplog.records) == 1 and "another Triton" in caplog.text and str(h200) in caplog.text
    monkeypatch.setenv("SPARSEMLA_OTHER_TRITON_TABLES", "0")
    assert 4 not in tuned_table.load_tables("NVIDIA_H200")[spec.key]
    monkeypatch.delenv("SPARSEMLA_OTHER_TRITON_TABLES")
    # A template change still makes a table unusable, whatever its Triton.
    h200.write_text(json.dumps({**data, "provenance": {**prov, "triton": "2.9.0", "template_hash": "0" * 16}}))
    assert 4 not in tuned_table.load_tables("NVIDIA_H200")[spec.key]
    h200.write_text(json.dumps({**data, "provenance": {**prov, "triton": "2.9.0"}}))

    cpu = torch.device("cpu")
    monkeypatch.setenv("SPARSEMLA_GPU", "NVIDIA H100 80GB HBM3")
    fp8, c_fp8 = replace(spec, kv_format="fp8_e4m3"), Config(64, 32, 2, 8, 2)
    write_table(tmp_path / "user" / "NVIDIA_H200" / "sparse_mla.json", "NVIDIA_H200", {fp8.key: {4: _entry(c_fp8, 4)}},
                prov)
    write_table(tmp_path / "user" / "NVIDIA_H100_80GB_HBM3" / "sparse_mla.json", "NVIDIA_H100_80GB_HBM3",
                {spec.key: {16: _entry(c_h100, 16)}}, prov)
    other = replace(spec, num_heads=128, kv_format="fp8_e4m3")  # in no table
    dispatch.clear_cache()
    try:
        assert dispatch.table_gpus(cpu, "sm90") == ("NVIDIA_H100_80GB_HBM3", "NVIDIA_H200")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparsemla"):
            assert dispatch.select_config(spec, 20, cpu) == c_h100  # its own table first
            assert dispatch.select_config(fp8, 20, cpu) == c_fp8  # a spec only the H200's holds (reported once)
            assert dispatch.select_config(replace(fp8, has_sink=True), 20, cpu) == c_fp8
            os.remove(tmp_path / "user" / "NVIDIA_H100_80GB_HBM3" / "sparse_mla.json")  # no own table at all
            dispatch.clear_cache()
            assert dispatch.select_config(spec, 100, cpu) == c_new
            assert dispatch.select_config(spec, 5, cpu) == c_old
        assert sum("reference part" in r.getMessage() for r in caplog.records) == 1
        assert dispatch.select_config(other, 5, cpu) == default_config(other, 5)
        assert dispatch.table_gpus(cpu, "sm121") == ("NVIDIA_H100_80GB_HBM3", "NVIDIA_GB10")
        monkeypatch.setattr(dispatch, "_REFERENCE", False)
        dispatch.clear_cache()
        assert dispatch.select_config(spec, 100, cpu) == default_config(spec, 100)
        monkeypatch.setattr(dispatch, "_REFERENCE", True)
        # On a GPU, only a part of the arch's own compute capability takes the reference part's table: a
        # cc 10.0 part runs sm120 code (runtime.api.device_arch) but is no RTX PRO 6000.
        cuda = torch.device("cuda", 0)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "NVIDIA B200")
        for cc, arch, expected in (((10, 0), "sm120", ("NVIDIA_B200",)),
                                   ((12, 0), "sm120", ("NVIDIA_B200", "NVIDIA_RTX_PRO_6000_Blackwell")),
                                   ((9, 0), "sm90", ("NVIDIA_B200", "NVIDIA_H200"))):
            monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, cc=cc: cc)
            dispatch.clear_cache()
            assert dispatch.table_gpus(cuda, arch) == expected, cc
    finally:
        dispatch.clear_cache()


def test_a_sibling_part_runs_its_siblings_table_before_the_reference_parts(tmp_path, monkeypatch, caplog):
    # An H800 SXM (an H100 SXM's silicon, SMs and memory) runs the H100's entries, then the H200's where the H100's
    # table has none; each stand-in is reported once, naming why; an H800 PCIe (no sibling) goes to the H200's.
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    spec = KernelSpec(arch="sm90", num_heads=64)
    fp8 = replace(spec, kv_format="fp8_e4m3")
    c_h100, c_h200, c_fp8 = Config(16, 16, 1, 4, 1), Config(32, 16, 1, 4, 1), Config(64, 32, 2, 8, 2)
    prov = software_provenance()
    write_table(tmp_path / "pkg" / "NVIDIA_H200" / "sparse_mla.json", "NVIDIA_H200",
                {spec.key: {1: _entry(c_h200, 1)}, fp8.key: {1: _entry(c_fp8, 1)}}, prov)
    write_table(tmp_path / "pkg" / "NVIDIA_H100_80GB_HBM3" / "sparse_mla.json", "NVIDIA_H100_80GB_HBM3",
                {spec.key: {1: _entry(c_h100, 1)}}, prov)
    cpu = torch.device("cpu")
    try:
        for name, own in (("NVIDIA H800", "NVIDIA_H800"), ("NVIDIA H800 80GB HBM3", "NVIDIA_H800_80GB_HBM3")):
            monkeypatch.setenv("SPARSEMLA_GPU", name)
            dispatch.clear_cache()
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="sparsemla"):
                assert dispatch.table_gpus(cpu, "sm90") == (own, "NVIDIA_H100_80GB_HBM3", "NVIDIA_H200")
                assert dispatch.select_config(spec, 8, cpu) == c_h100
                assert dispatch.select_config(fp8, 8, cpu) == c_fp8
            messages = [r.getMessage() for r in caplog.records]
            assert len(messages) == 2 and "same SMs and memory" in messages[0] and "reference part" in messages[1]
            assert dispatch.table_gpus(cpu, "sm120") == (own, "NVIDIA_RTX_PRO_6000_Blackwell")  # sm90 only
        monkeypatch.setenv("SPARSEMLA_GPU", "NVIDIA H800 PCIe")  # 114 SMs: no sibling
        dispatch.clear_cache()
        assert dispatch.table_gpus(cpu, "sm90") == ("NVIDIA_H800_PCIe", "NVIDIA_H200")
        assert dispatch.select_config(spec, 8, cpu) == c_h200
        assert tuned_table.stand_in_gpus("NVIDIA_H100_80GB_HBM3", "sm90") == ("NVIDIA_H200",)
        assert tuned_table.stand_in_gpus("NVIDIA_H200", "sm90") == ()
        # The tuner seeds its studies the same way: an H800's from the H100's entries, then the H200's.
        held = {}
        assert seed_entry("NVIDIA_H800", spec, 1, held).config == c_h100
        assert seed_entry("NVIDIA_H800", fp8, 1, held).config == c_fp8
        assert seed_entry("NVIDIA_H800", fp8, 2, held) is None  # no bucket 2 anywhere
        assert seed_entry("NVIDIA_H200", spec, 1, held).config == c_h200
        assert sorted(held) == ["NVIDIA_H100_80GB_HBM3", "NVIDIA_H200", "NVIDIA_H800"]
    finally:
        dispatch.clear_cache()


def test_a_tuned_config_that_fails_is_replaced_by_the_default(tmp_path, monkeypatch, caplog):
    # A table entry this Triton cannot build or launch (e.g. a table of another Triton) is reported once and the
    # call runs the default config; a config the caller passed fails as it is.
    from sparsemla.runtime import api, triton_backend
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("SPARSEMLA_GPU", "NVIDIA H200")
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    spec = KernelSpec(arch="sm90", num_heads=16, topk=64, q_dtype="fp32", compute_dtype="fp32")
    broken = Config(16, 32, 2, 4, 1)
    write_table(tmp_path / "user" / "NVIDIA_H200" / "sparse_mla.json", "NVIDIA_H200", {spec.key: {1: _entry(broken, 1)}},
                software_provenance())
    real = triton_backend.TritonLaunch

    class Launch(real):  # the tuned config's kernel "does not build"
        def __init__(self, spec, config, *args, **kw):
            if config == broken:
                raise RuntimeError("PassManager::run failed")
            super().__init__(spec, config, *args, **kw)

    monkeypatch.setattr(triton_backend, "TritonLaunch", Launch)
    dispatch.clear_cache()
    try:
        cpu = torch.device("cpu")
        assert dispatch.select_config(spec, 2, cpu) == broken
        q, kv = torch.randn(2, 16, 576), torch.randn(256, 576)
        idx = torch.randint(0, 256, (2, 64), dtype=torch.int32)
        idx[1, 5:] = -1
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparsemla"):
            outs = [sparsemla.sparse_mla(q, kv, idx, sm_scale=0.05, backend="triton") for _ in range(2)]
        ref = sparsemla.sparse_mla(q, kv, idx, sm_scale=0.05, backend="torch")
        assert all(torch.allclose(o, ref, atol=1e-4, rtol=1e-4) for o in outs)
        assert [r.getMessage() for r in caplog.records if "failed" in r.getMessage()] == [
            f"sparsemla: the tuned config {broken} for {spec.key} failed (RuntimeError: PassManager::run failed); "
            f"running the default config {dispatch.untuned_config(spec, 2, cpu)}"]
        with pytest.raises(RuntimeError, match="PassManager"):
            sparsemla.sparse_mla(q, kv, idx, sm_scale=0.05, backend="triton", config=broken)
    finally:
        dispatch.clear_cache()
        api.clear_call_cache()


def test_static_tables_from_compile_checks(tmp_path):
    def fake(spec, cfg, arch):  # 2 stages "do not fit" for 128 heads; model1 always spills
        too_big = spec.num_heads == 128 and cfg.num_stages >= 2
        spills = 64 if spec.kv_format == "model1" else 0
        return CompileReport(spec.key, cfg, arch, True, 200_000 if too_big else 50_000, 255, spills)

    specs = suite_specs("sm120", formats=["bf16", "model1"], heads=[16, 128])
    entries, missing = static_entries("sm120", CompileConstraint(0, fake, None), specs, out=None)
    assert not missing
    assert sum(len(b) for b in entries.values()) == sum(len(b) for _, b in specs) == 2 * (6 + 7)
    for key, buckets in entries.items():
        spec = KernelSpec.from_key(key)
        for b, e in buckets.items():
            d = default_config(spec, b)
            assert e.source == "static" and e.time_us is None
            assert e.config == (d if spec.num_heads == 16 else Config(d.block_h, d.block_n, d.num_splits,
                                                                       d.num_warps, 1))
    path = write_table(tmp_path / "t.json", "NVIDIA_GB10", entries, software_provenance())
    assert load_table(path).keys() == entries.keys()


def test_tune_cli_without_gpu(capsys):
    from sparsemla.gen.tune import tune_main
    assert tune_main(["--formats", "bf16", "--heads", "16", "--trials", "8"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tune_main(["--static"])  # --static needs --arch
    # bad lists are usage errors naming the option, before any work (bench's options take the same types)
    from sparsemla.bench import bench_main
    for main, argv, words in [
            (tune_main, ["--static", "--arch", "sm120", "--formats", "fp8,bf17"], "--formats: bf17"),
            (tune_main, ["--static", "--arch", "sm120", "--heads", "16,0"], "--heads: '16,0'"),
            (tune_main, ["--static", "--arch", "sm120", "--tokens", "3"], "tokens=[3]: expected powers of two"),
            (bench_main, ["--tokens", "x"], "--tokens: 'x'"),
            (bench_main, ["--formats", "fp9"], "--formats: fp9")]:
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and words in capsys.readouterr().err, argv


def test_shipped_tables_parse():
    for path in tuned_table.package_dir().glob("*/sparse_mla.json"):
        assert load_table(path, check_provenance=False), path


def test_shipped_tables_are_stamped_with_this_template():
    # A template change that is not re-stamped (benchmarks/ptx_same.py, then restamp.py) or re-tuned
    # makes every GPU ignore its table and run default configs (as a device call of session 18 did).
    import json
    from sparsemla.gen.render import attention_template_hash
    for path in tuned_table.package_dir().glob("*/sparse_mla.json"):
        assert json.load(open(path))["provenance"]["template_hash"] == attention_template_hash(), path


def test_every_tuned_gpu_folder_is_a_listed_package():
    # pyproject.toml lists each tuned/<GPU> folder as a package with its JSON as package data: setuptools warns about
    # importable folders it is not told about (and a wheel built without them would ship no table for that GPU).
    import pathlib
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11 on)
    root = pathlib.Path(__file__).resolve().parent.parent
    setup = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = sorted(p.parent.name for p in (root / "tuned").glob("*/*.json"))
    assert folders
    for gpu in folders:
        assert f"sparsemla.tuned.{gpu}" in setup["packages"], f"tuned/{gpu}: add it to pyproject.toml's packages"
        assert setup["package-data"].get(f"sparsemla.tuned.{gpu}") == ["*.json"], f"tuned/{gpu}: its package-data"


# ---------------------------------------------------------------- the GPU measurer's CPU-side parts

@pytest.mark.parametrize("fmt,d_qk,page", [("auto", 576, 1), ("fp8_e4m3", 512, 16),
                                           ("fp8_ds_mla", 576, 64), ("model1", 512, 64)])
def test_poisoned_inputs(fmt, d_qk, page):
    spec = KernelSpec(kv_format=fmt, d_qk=d_qk, num_heads=16, topk=32, page_size=page)
    kw = make_inputs(spec, 3, "cpu", slots=256, poison=True)
    deq = sparsemla.dequantize_kv(kw["kv_cache"], fmt, page_size=kw.get("page_size"),
                                  kv_scale=kw.get("kv_scale"))
    idx = kw["indices"]
    assert (idx == -1).any()
    ref = torch.zeros(deq.shape[0], dtype=torch.bool)
    ref[idx[idx >= 0].long()] = True
    assert torch.isfinite(deq[ref]).all()
    assert torch.isnan(deq[~ref]).all() and (~ref).sum() > 50


def test_check_flags_wrong_or_unwritten_output(monkeypatch):
    spec = KernelSpec(d_qk=48, d_v=32, num_heads=16, topk=32, q_dtype="fp32", compute_dtype="fp32")
    kw = make_inputs(spec, 3, "cpu", slots=128, poison=True)
    m = check(spec, Config(16, 16, 2, 4, 1), kw)
    assert m.ok and m.error < 1e-3, m
    # per-token arguments are cut to the reference's tokens with q (10 tokens; the first and last four)
    kw = make_inputs(spec, 10, "cpu", slots=128, poison=True)
    kw["topk_length"] = torch.tensor([32, 0, 5, 17, 32, 3, 1, 0, 20, 9], dtype=torch.int32)
    m = check(spec, Config(16, 16, 2, 4, 1), kw)
    assert m.ok and m.error < 1e-3, m
    kw = make_inputs(spec, 3, "cpu", slots=128, poison=True)
    from sparsemla.runtime import triton_backend
    monkeypatch.setattr(triton_backend, "run_triton", lambda *a, **k: None)  # writes nothing
    m = check(spec, Config(16, 16, 2, 4, 1), kw)
    assert not m.ok and "NaN" in m.reason and math.isinf(m.time_us)
    monkeypatch.setattr(triton_backend, "run_triton", lambda spec, cfg, q, view, idx, sc, out, *a, **k: out.fill_(1))
    m = check(spec, Config(16, 16, 2, 4, 1), kw)
    assert not m.ok and "relative error" in m.reason


def test_measure_request_plumbing(monkeypatch):
    """The child's request handler end to end on the CPU; only the CUDA timing is faked."""
    from sparsemla.gen import gpu_measure
    monkeypatch.setattr(gpu_measure, "TIMING_SLOTS", 4096)
    monkeypatch.setattr(gpu_measure, "time_calls", lambda calls, **k: (3.5 if len(calls) > 1 else 0.0, "graph"))
    spec = KernelSpec(d_qk=48, d_v=32, num_heads=16, topk=32, q_dtype="fp32", compute_dtype="fp32")
    req = dict(op="measure", spec=spec.key, config=Config(16, 16, 2, 4, 1).to_dict(), num_tokens=2)
    res = gpu_measure.handle(req, gpu_measure._State("cpu"))
    assert res["ok"] and res["time_us"] == 3.5 and res["error"] < 1e-3, res


def _fake_child(req, state):
    """Runs in the measurer's child process (see test_measurer_isolation)."""
    if req["op"] == "crash":
        os._exit(3)
    if req["op"] == "hang":
        time.sleep(60)
    if req["op"] == "raise":
        raise RuntimeError("boom")
    return dict(time_us=7.0, error=0.0, ok=True, reason="")


def test_measurer_isolation():
    m = GpuMeasurer(timeout=20, handler=f"{__name__}:_fake_child")
    try:
        assert m(SPEC, Config(16, 32, 1, 4, 2), 4) == Measurement(7.0, 0.0, True)
        ok, why = m.request({"op": "crash"})
        assert not ok and "exit code 3" in why
        m.timeout = 2
        ok, why = m.request({"op": "hang"})
        assert not ok and "timed out" in why
        m.timeout = 20
        ok, why = m.request({"op": "raise"})
        assert not ok and "boom" in why
        assert m(SPEC, Config(16, 32, 1, 4, 2), 4).ok  # a fresh child serves the next trial
    finally:
        m.close()


def test_tuned_report_shows_what_each_entry_replaced(tmp_path):
    # benchmarks/tuned_report.py: a "before the run" column where entries name their incumbent, none for older tables
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "tuned_report.py"
    spec_ = importlib.util.spec_from_file_location("tuned_report", path)
    tuned_report = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(tuned_report)
    table = tmp_path / "t.json"
    old = _entry(Config(16, 64, 8, 8, 1), 4)
    write_table(table, "FAKE", {SPEC.key: {4: old}}, software_provenance())
    assert "before the run" not in tuned_report.report(json.loads(table.read_text()))
    new = replace(old, incumbent=Config(16, 64, 16, 8, 1), incumbent_time_us=14.25)
    untimed = replace(old, bucket=64, incumbent=Config(16, 64, 2, 8, 1))
    write_table(table, "FAKE", {SPEC.key: {4: new, 64: untimed}}, software_provenance())
    text = tuned_report.report(json.loads(table.read_text()))
    assert "before the run" in text and "| h16 n64 s16 w8 st1 14.2 |" in text and "| h16 n64 s2 w8 st1 - |" in text
