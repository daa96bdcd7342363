"""The paging kernels' tuner (gen.paging_tune), their tables (gen.paging_table) and the runtime's lookup."""
import json
import logging
import os
import subprocess
import sys
from dataclasses import replace

import optuna
import pytest
import torch

from sparsemla.gen import paging_table, paging_tune, tuned_table
from sparsemla.gen.paging import (ConvertIndicesSpec, PackValidPrefixSpec, PageSplitSpec, PagingConfig,
                                  default_config_for, spec_from_key)
from sparsemla.gen.paging_table import PagingEntry, paging_provenance, read_table, write_table
from sparsemla.gen.paging_tune import PagingMeasurer, PagingProblem, TrialFailed
from sparsemla.runtime import dispatch, paging

optuna.logging.set_verbosity(optuna.logging.WARNING)
CONVERT = ConvertIndicesSpec(4, 64)
CPU = torch.device("cpu")


@pytest.fixture
def tables(tmp_path, monkeypatch):
    """A user tables dir and an empty package dir for a GPU named FAKE (the CPU's, via SPARSEMLA_GPU)."""
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("SPARSEMLA_GPU", "FAKE")
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    dispatch.clear_cache()
    yield tmp_path / "user" / "FAKE" / "paging.json"
    dispatch.clear_cache()


def _fake_measure(times, calls=None):
    """A measure whose time is ``times(config)``; None there: the config gives a wrong result."""
    def measure(problem, cfg):
        if calls is not None:
            calls.append(cfg)
        t = times(cfg)
        if t is None:
            raise TrialFailed("wrong")
        return t
    return measure


def test_spec_keys_round_trip():
    for spec in (CONVERT, PackValidPrefixSpec(2048, "sm120"), PageSplitSpec(256, 64, "sm121")):
        assert spec_from_key(spec.key) == spec
    for bad in ("convert_indices-sm90-p4", "page_split-sm70-model1-p256-to64", "page_split-sm90-model1-p100-to64",
                "pack_valid_prefix-sm90-w007"):
        with pytest.raises(ValueError, match="paging spec key|expected"):
            spec_from_key(bad)
    with pytest.raises(ValueError, match=r"path='touched' for convert_indices.*expected one of \('plain', 'compact'\)"):
        PagingProblem(CONVERT, "touched", 1)


def test_the_tuner_picks_the_fastest_correct_config_and_the_runtime_runs_it(tables):
    # block 128 is fastest but wrong, block 64 with 2 warps the fastest correct one
    def times(cfg):
        return None if cfg.block == 128 else 10.0 - (cfg.block == 64) * 5 - (cfg.num_warps == 2)
    spec = ConvertIndicesSpec(4, 256)
    problems = [PagingProblem(spec, "compact", b) for b in (1, 8)]
    entries = paging_tune.tune(problems, _fake_measure(times), gpu="FAKE", out_path=tables,
                               storage=optuna.storages.InMemoryStorage(), trials=40, out=None)
    key = problems[0].key
    assert set(entries[key]) == {1, 8}
    for b in (1, 8):
        e = entries[key][b]
        assert e.config == replace(spec.default_config(compact=True), block=64, num_warps=2)
        assert e.time_us == 4.0 and e.default_time_us == 10.0 and e.trials == len(paging_tune.search_space(problems[0])["block"]) * 5
    assert read_table(tables)[key][8].config.block == 64
    # the runtime: the bucket at or below the call's size, the smallest below it; other paths: the default
    for size in (1, 5, 8, 500):
        assert paging.tuned_config(spec, "compact", size, CPU).block == 64
    assert paging.tuned_config(spec, "plain", 8, CPU) == spec.default_config()
    assert "| convert_indices-sm90-p4-k256:compact | 8 |" in paging_tune.report(entries)


def test_a_config_that_fails_when_measured_again_is_not_shipped(tables):
    runs = {}

    def times(cfg):  # block 64 wins the search, then gives a wrong result once when confirmed
        runs[cfg] = runs.get(cfg, 0) + 1
        if cfg.block == 64:
            return None if runs[cfg] == 2 else 1.0
        return 10.0 - cfg.num_warps / 100
    problem = PagingProblem(PackValidPrefixSpec(128), "plain", 4)
    entries = paging_tune.tune([problem], _fake_measure(times), gpu="FAKE", out_path=tables,
                               storage=optuna.storages.InMemoryStorage(), trials=40, out=None)
    assert entries[problem.key][4].config == problem.default  # the three finalists all failed once


def test_nothing_is_written_when_no_config_is_correct(tables):
    problem = PagingProblem(PackValidPrefixSpec(64), "plain", 4)
    assert paging_tune.tune([problem], _fake_measure(lambda c: None), gpu="FAKE", out_path=tables,
                            storage=optuna.storages.InMemoryStorage(), trials=5, out=None) == {}
    assert not tables.exists()


def test_a_study_resumes_from_its_journal(tmp_path):
    problem = PagingProblem(PageSplitSpec(256, 64), "touched", 2048)
    from sparsemla.gen.tune import open_storage
    journal = open_storage(tmp_path / "j.journal")
    calls = []
    measure = _fake_measure(lambda c: 5.0 + c.num_warps / 10 + c.programs_per_sm / 100, calls)
    s1 = paging_tune.run_study(problem, measure, storage=journal, gpu="FAKE", trials=6, out=None)
    assert len(calls) == 6 and calls[0] == problem.default  # the arch's default first, whole
    assert all(c.lead_min_ids == 0 for c in calls[1:])  # a sampled lead share: the bucket decides
    s2 = paging_tune.run_study(problem, measure, storage=open_storage(tmp_path / "j.journal"), gpu="FAKE",
                               trials=10, out=None)
    assert s2.study_name == s1.study_name and len(calls) == 10  # the first six were not measured again
    measured = [t for t in s2.get_trials() if "time_us" in t.user_attrs]
    assert len(measured) == 10


def test_a_tables_config_is_measured_right_after_the_default():
    problem = PagingProblem(PageSplitSpec(256, 64), "touched", 524288)
    incumbent = replace(problem.default, num_warps=8, programs_per_sm=8, mark_copies=4, mark_spacing=1, tma_stages=4,
                        lead_min_ids=0)
    calls = []
    study = paging_tune.run_study(problem, _fake_measure(lambda c: 2.0 if c == incumbent else 3.0, calls),
                                  storage=optuna.storages.InMemoryStorage(), gpu="FAKE", trials=4, out=None,
                                  incumbent=incumbent)
    assert calls[:2] == [problem.default, incumbent] and paging_tune.best_trial(study).value == 2.0


def test_bad_or_stale_paging_tables_are_reported_and_skipped(tables, caplog):
    key = f"{CONVERT.key}:plain"
    entry = PagingEntry(PagingConfig(64, 2), 1, 1.0, 2.0)
    write_table(tables, "FAKE", {key: {1: entry}}, paging_provenance())
    assert not list(tables.parent.glob("*.tmp"))
    good = json.loads(tables.read_text())
    assert paging.tuned_config(CONVERT, "plain", 3, CPU) == PagingConfig(64, 2)
    bad = {
        "malformed": "{ not json",
        "stale": json.dumps({**good, "provenance": {**good["provenance"], "template_hash": "0" * 16}}),
        "family": json.dumps({**good, "family": "sparse_mla"}),
        "badconfig": json.dumps({**good, "entries": {key: {"1": {"config": {"block": 3}}}}}),
        "unknownfield": json.dumps({**good, "entries": {key: {"1": {"config": {"blocks": 64}}}}}),
        "badkey": json.dumps({**good, "entries": {"convert_indices-sm90-p4-k64:touched": good["entries"][key]}}),
        "badtime": json.dumps({**good, "entries": {key: {"1": {**good["entries"][key]["1"], "time_us": "fast"}}}}),
    }
    for name, text in bad.items():
        tables.write_text(text)
        dispatch.clear_cache()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparsemla"):
            for _ in range(2):  # the caller runs the default; reported once
                assert paging.tuned_config(CONVERT, "plain", 3, CPU) == CONVERT.default_config(), name
                dispatch.clear_cache()
        assert len(caplog.records) == 1 and str(tables) in caplog.text, name
        tuned_table._reported.discard(str(tables))
    # a write over a bad file drops its entries and writes a whole one
    write_table(tables, "FAKE", {key: {1: entry}}, paging_provenance())
    assert read_table(tables)[key][1].config == PagingConfig(64, 2)


def test_the_reference_parts_paging_table_serves_its_arch(tmp_path, monkeypatch, caplog):
    # An H100 (sm90) without a paging table of its own runs the H200's entries, and says so once.
    monkeypatch.setenv("SPARSEMLA_TUNED_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("SPARSEMLA_GPU", "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    dispatch.clear_cache()
    spec = PackValidPrefixSpec(2048)
    write_table(tmp_path / "pkg" / "NVIDIA_H200" / "paging.json", "NVIDIA_H200",
                {f"{spec.key}:plain": {1: PagingEntry(PagingConfig(256, 8), 1)}}, paging_provenance())
    with caplog.at_level(logging.WARNING, logger="sparsemla"):
        assert paging.tuned_config(spec, "plain", 64, CPU) == PagingConfig(256, 8)
    assert "running the tuned configs of NVIDIA_H200" in caplog.text and "tune-paging" in caplog.text
    dispatch.clear_cache()


def test_calls_without_config_launch_the_tuned_config(tables, monkeypatch):
    # Under the interpreter, with a table for this "GPU": each call's kernels get the tuned fields.
    spec, pspec = ConvertIndicesSpec(16, 64), PageSplitSpec(128, 64)
    tuned = {f"{spec.key}:plain": {1: PagingEntry(PagingConfig(64, 2), 1), 4: PagingEntry(PagingConfig(128, 1), 4)},
             f"{pspec.key}:all": {1: PagingEntry(PagingConfig(256, 2), 1)},
             f"{pspec.key}:touched": {1: PagingEntry(replace(pspec.default_config(touched=True), mark_copies=4,
                                                             lead_split=0, tma_stages=0), 1)}}
    write_table(tables, "FAKE", tuned, paging_provenance())
    seen = []
    real = paging.launch
    monkeypatch.setattr(paging, "launch", lambda fn, grid, *a, **kw: (seen.append((fn.__name__, kw)),
                                                                      real(fn, grid, *a, **kw))[1])
    gen = torch.Generator().manual_seed(0)
    table = torch.randint(0, 9, (1, 6), generator=gen, dtype=torch.int32)
    local = torch.randint(-1, 100, (3, 64), generator=gen, dtype=torch.int32)
    for T, block, warps in ((3, 64, 2), (4, 128, 1)):
        req_t, local_t = torch.zeros(T, dtype=torch.int32), local[:1].expand(T, 64).contiguous()
        got = paging.convert_indices(req_t, table, local_t, page_size=16)
        assert torch.equal(got, paging.convert_indices_reference(req_t, table, local_t, page_size=16))
        assert seen[-1] == ("convert_indices_kernel", dict(COMPACT=False, BLOCK_K=block, num_warps=warps))
    from sparsemla.gen.layout import model1_page_bytes
    src = torch.randint(0, 256, (3, model1_page_bytes(128)), generator=gen, dtype=torch.uint8)
    out = torch.zeros(6, model1_page_bytes(64), dtype=torch.uint8)
    paging.page_split(src, src_page_size=128, out=out)
    assert seen[-1][1]["BLOCK"] == 256 and seen[-1][1]["num_warps"] == 2
    want = paging.page_split_reference(src, src_page_size=128, out=torch.zeros_like(out))
    assert torch.equal(out, want)
    seen.clear()
    tok = torch.tensor([5, 300, -1], dtype=torch.int32)
    out.zero_()
    paging.page_split(src, src_page_size=128, touched_indices=tok, out=out)
    assert any(n == "page_mark_kernel" and kw["COPIES"] == 4 for n, kw in seen)
    assert torch.equal(out, paging.page_split_reference(src, src_page_size=128, touched_indices=tok,
                                                        out=torch.zeros_like(out)))


@pytest.mark.parametrize("path,size", [("compact", 3), ("plain", 2)])
def test_the_measurer_checks_convert_indices_under_the_interpreter(path, size, monkeypatch):
    m = PagingMeasurer("cpu", max_blocks=8)
    problem = PagingProblem(CONVERT, path, size)
    assert m(problem, problem.default) > 0 and m.inputs(problem).written() is None
    real = paging.launch

    def off_by_one(fn, grid, *a, **kw):  # a kernel that writes one slot wrong
        real(fn, grid, *a, **kw)
        a[10][0, 0] += 1  # (out)
    monkeypatch.setattr(paging, "launch", off_by_one)
    with pytest.raises(TrialFailed, match="first call: output 0 differs from the reference"):
        m(problem, problem.default)


@pytest.mark.parametrize("path,size", [("all", 1), ("touched", 40)])
def test_the_measurer_checks_page_split_under_the_interpreter(path, size, monkeypatch):
    from sparsemla.gen.layout import model1_page_bytes
    m = PagingMeasurer("cpu", pool_gb=6 * model1_page_bytes(128) / 1e9)
    problem = PagingProblem(PageSplitSpec(128, 64), path, size)
    assert m(problem, problem.default) > 0
    inp = m.inputs(problem)
    inp.check(inp.written(), "after")  # (what the GPU's check of a replayed graph reads)
    assert inp.src.shape[0] == 6 and (path == "all" or "ids over" in inp.workload)
    real = paging.launch
    copies = ("page_split_kernel", "page_split_list_kernel", "page_split_chunk_kernel")
    # copies that never run: the poisoned destination shows it
    monkeypatch.setattr(paging, "launch", lambda fn, grid, *a, **kw: None if fn.__name__ in copies
                        else real(fn, grid, *a, **kw))
    with pytest.raises(TrialFailed, match="first call"):
        m(problem, problem.default)


def test_shipped_problems_and_spaces():
    for arch in ("sm90", "sm120", "sm121"):
        problems = paging_tune.shipped_problems(arch)
        assert len({(p.key, p.size) for p in problems}) == len(problems) == 17
        for p in problems:
            space = paging_tune.search_space(p)
            assert space and all(len(v) == len(set(v)) for v in space.values())
            d = p.default
            # every value a study samples is a config the runtime accepts (or the check rejects it by name)
            for k, vs in space.items():
                for v in vs:
                    try:
                        paging_tune.config_from_params(p, {k: v}).check(p.spec)
                    except ValueError as e:
                        assert p.spec.key in str(e)
            assert d == default_config_for(p.spec, p.path)


def test_tune_paging_cli_without_gpu(capsys):
    assert paging_tune.tune_paging_main(["--trials", "4"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_tune_paging_cli_wiring(tmp_path, monkeypatch, capsys):
    # The command on a pretend H100: --only picks problems, the H200's table seeds them, the table and report appear.
    import sparsemla.runtime.api as api
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda dev=None: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(api, "device_arch", lambda dev: "sm90")
    monkeypatch.setattr(paging_tune, "device_provenance", lambda dev: dict(gpu_name="NVIDIA H100 80GB HBM3"))
    monkeypatch.setattr(tuned_table, "package_dir", lambda: tmp_path / "pkg")
    spec = PackValidPrefixSpec(2048)
    seeded = PagingConfig(256, 8)
    write_table(tmp_path / "pkg" / "NVIDIA_H200" / "paging.json", "NVIDIA_H200",
                {f"{spec.key}:plain": {32: PagingEntry(seeded, 32)}}, paging_provenance())
    calls = []
    monkeypatch.setattr(paging_tune, "PagingMeasurer", lambda dev, pool_gb: _fake_measure(
        lambda c: 1.0 + c.block / 1e4 + c.num_warps / 1e3, calls))
    rc = paging_tune.tune_paging_main(["--only", "pack_valid_prefix-sm90-w2048:plain rows=32", "--out",
                                       str(tmp_path / "out"), "--storage", str(tmp_path / "j.journal")])
    assert rc == 0 and calls[:2] == [spec.default_config(), seeded]
    got = read_table(tmp_path / "out" / "NVIDIA_H100_80GB_HBM3" / "paging.json")
    assert list(got) == [f"{spec.key}:plain"] and got[f"{spec.key}:plain"][32].config == PagingConfig(64, 1)
    assert "| pack_valid_prefix-sm90-w2048:plain | 32 |" in capsys.readouterr().out
    dispatch.clear_cache()


def test_shipped_paging_tables_are_current_and_compile():
    # A paging template change makes a shipped table stale (skipped, reported): re-tune or re-stamp it.
    paths = list(tuned_table.package_dir().glob("*/paging.json"))
    configs = []
    for path in paths:
        data = json.loads(path.read_text())
        assert paging_table.parse_table(data) and paging_table._stale(data["provenance"]) == "", path
        for key, buckets in data["entries"].items():
            spec, _ = paging_table.split_key(key)
            configs += [(spec.key + ":" + key.rpartition(":")[2], b["config"]) for b in buckets.values()]
    if not configs:
        pytest.skip("no paging table is shipped")
    script = ("import json, sys\nfrom sparsemla.gen.paging import PagingConfig\n"
              "from sparsemla.gen.paging_table import split_key\nfrom sparsemla.gen.paging import compile_paging\n"
              "for key, cfg in json.loads(sys.argv[1]):\n"
              "    spec, _ = split_key(key)\n    compile_paging(spec, spec.arch, PagingConfig.from_dict(cfg))\n"
              "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    uniq = list({json.dumps(c, sort_keys=True): c for c in configs}.values())  # (one compile per spec and config)
    res = subprocess.run([sys.executable, "-c", script, json.dumps(uniq)], capture_output=True, text=True, env=env,
                         timeout=900)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]
