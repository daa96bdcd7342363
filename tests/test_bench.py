"""`sparsemla bench`'s journal: an interrupted suite run resumes where it stopped (the GPU measurement itself is
replaced here by a stand-in that records which rows it was asked for)."""
import importlib.util
import itertools
import json
import os
import pathlib

import pytest
import torch

from sparsemla import bench
from sparsemla.gen.spec import Config

CPU = torch.device("cpu")
KEY = dict(gpu="NVIDIA H200", triton="3.6.0", template_hash="abc", flashinfer_rows=False)


class Interrupted(Exception):
    pass


@pytest.fixture
def measured(monkeypatch):
    """The rows measure_row was asked for; it raises Interrupted on the row numbered ``stop_at`` (1-based)."""
    asked = []
    state = {"stop_at": None}

    def measure_row(fmt, T, H, spec, cfg, cache, kw, device, ceilings, anchor, check, log=print):
        asked.append((fmt.name, T, H))
        if len(asked) == state["stop_at"]:
            raise Interrupted
        return dict(format=fmt.name, kv_format=fmt.kv_format, d_qk=fmt.d_qk, T=T, H=H, topk=bench.TOPK,
                    config=cfg.to_dict(), us=float(T * H), copy_gbs_seen=ceilings["copy_gbs"])

    monkeypatch.setattr(bench, "measure_row", measure_row)
    monkeypatch.setattr(bench, "make_cache", lambda fmt, device: (None, {}))
    ceilings = itertools.cycle([(4000.0, 700.0), (3000.0, 600.0)])
    monkeypatch.setattr(bench, "measure_ceilings", lambda device: next(ceilings))
    return asked, state


def _run(rows, path, key=KEY, configs=None):
    done = []
    res = bench.run_suite(rows, CPU, with_flashinfer=False, log=lambda line: None, configs=configs,
                          journal=bench.Journal(path, key, log=lambda line: None),
                          progress=lambda n, total: done.append((n, total)))
    assert done == [(n, len(rows)) for n in range(1, len(rows) + 1)]  # progress after every row
    return res


def test_an_interrupted_run_resumes_from_its_journal(tmp_path, measured):
    asked, state = measured
    rows = bench.suite_rows(["bf16", "fp8"], tokens=[1, 4], heads=[16], prefill=False)
    path = tmp_path / "NVIDIA_H200.partial.json"
    state["stop_at"] = 3
    with pytest.raises(Interrupted):
        _run(rows, path)
    kept = json.loads(path.read_text())
    assert kept["key"] == KEY and [(r["format"], r["T"], r["H"]) for r in kept["rows"]] == rows[:2]

    asked.clear()
    state["stop_at"] = None
    res = _run(rows, path)
    assert asked == rows[2:]  # only the rows not measured before
    assert [(r["format"], r["T"], r["H"]) for r in res["rows"]] == rows  # in the suite's order
    # The ceilings the first rows' rooflines were computed with are kept (not measured again).
    assert res["ceilings"] == dict(copy_gbs=4000.0, bf16_tflops=700.0)
    assert {r["copy_gbs_seen"] for r in res["rows"]} == {4000.0}
    bench.Journal(path, KEY).finish()
    assert not path.exists()


def test_a_journal_of_another_run_or_config_is_not_reused(tmp_path, measured):
    asked, state = measured
    rows = bench.suite_rows(["bf16"], tokens=[1, 4], heads=[16], prefill=False)
    path = tmp_path / "GPU.partial.json"
    _run(rows, path)
    asked.clear()
    _run(rows, path, key=dict(KEY, triton="3.9.0"))  # another Triton: every row again
    assert asked == rows
    asked.clear()
    _run(rows, path, key=dict(KEY, triton="3.9.0"), configs={("bf16", 4, 16): Config(16, 32, 2, 4, 1)})
    assert asked == [("bf16", 4, 16)]  # a row whose config changed
    path.write_text("{not json")
    asked.clear()
    _run(rows, path)  # unreadable: reported and started over
    assert asked == rows


def test_rows_that_failed_are_measured_again(tmp_path, measured):
    asked, state = measured
    rows = bench.suite_rows(["bf16"], tokens=[1, 4], heads=[16], prefill=False)
    path = tmp_path / "GPU.partial.json"
    _run(rows, path)
    data = json.loads(path.read_text())
    data["rows"][1]["error"] = "RuntimeError: out of memory"
    path.write_text(json.dumps(data))
    asked.clear()
    _run(rows, path)
    assert asked == [rows[1]]


def _merge_bench():
    """benchmarks/merge_bench.py as a module (a script, not in the package)."""
    path = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "merge_bench.py"
    spec = importlib.util.spec_from_file_location("merge_bench", path)
    merge_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(merge_bench)
    return merge_bench


def test_a_run_records_the_runtime_options_it_ran_with(monkeypatch):
    # a bench run with a non-default runtime option (e.g. SPARSEMLA_TAIL_SPLIT=1) says so in its provenance, its
    # Markdown and merge_bench's list of runs; its journal key differs from a run without it
    for k in [k for k in os.environ if k.startswith("SPARSEMLA_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("SPARSEMLA_CACHE_DIR", "/tmp/x")  # where modules are cached: not an option
    assert bench.runtime_options() == {} and bench.options_note({"options": {}}) == ""
    monkeypatch.setenv("SPARSEMLA_TAIL_SPLIT", "1")
    monkeypatch.setenv("SPARSEMLA_PDL_WAIT", "1")
    opts = bench.runtime_options()
    assert opts == {"SPARSEMLA_PDL_WAIT": "1", "SPARSEMLA_TAIL_SPLIT": "1"}
    assert bench.options_note({"options": opts}) == " Runtime options: SPARSEMLA_PDL_WAIT=1, SPARSEMLA_TAIL_SPLIT=1."
    assert bench.options_note({}) == ""  # a run from before options were recorded
    merge_bench = _merge_bench()
    prov = dict(gpu="NVIDIA H200", date="2026-12-05T00:00:00+00:00", template_hash="abc", triton="3.6.0",
                flashinfer="0.7.2", torch="2.11", options=opts)
    res = dict(runs=[dict(provenance=prov, ceilings=dict(copy_gbs=4250.0, bf16_tflops=690.0), formats=["bf16"])],
               rows=[])
    assert "Runtime options: SPARSEMLA_PDL_WAIT=1, SPARSEMLA_TAIL_SPLIT=1." in merge_bench.markdown(res)


def test_a_run_merged_twice_is_listed_once(tmp_path):
    merge_bench = _merge_bench()
    prov = dict(gpu="NVIDIA H200", date="2026-12-05T00:00:00+00:00", template_hash="abc", triton="3.6.0",
                flashinfer="0.7.2", torch="2.11")
    row = dict(format="bf16", T=4, H=16, config=dict(block_n=32))
    run = tmp_path / "run.json"
    run.write_text(json.dumps(dict(provenance=prov, ceilings=dict(copy_gbs=4250.0, bf16_tflops=690.0), rows=[row])))
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps(merge_bench.merge([str(run)])))
    res = merge_bench.merge([str(merged), str(run)])
    assert len(res["runs"]) == 1 and res["runs"][0]["formats"] == ["bf16"] and len(res["rows"]) == 1
    assert merge_bench.markdown(res).count("template abc") == 1
