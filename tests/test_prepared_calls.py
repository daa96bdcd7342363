"""The device calls prepared for the next GPU session still parse and import.

They run only on the lent H200, sessions after they were written: a refactor that renames what they import would
otherwise surface there, costing device time. Each prepared call script (bash) must parse, and every Python script
it runs must compile and, except those that touch CUDA at import, import with the package as it is now.
"""
import importlib
import os
import py_compile
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PREPARED = ["benchmarks/h200_session.sh", "benchmarks/h200_steps.sh", "benchmarks/h200_tune.sh",
            "benchmarks/calls/s53_ask.sh", "benchmarks/calls/s54_ask.sh", "benchmarks/calls/s54_pairs.sh",
            "benchmarks/calls/s55_ask.sh", "benchmarks/calls/s55_h100_bench.sh",
            "benchmarks/calls/h200_call_tune_gluon.sh",
            "benchmarks/calls/h200_call_extra_parts.sh", "benchmarks/calls/h200_call_prefill_rows.sh",
            "benchmarks/calls/h200_call_s28a.sh", "benchmarks/calls/h200_call_s28b.sh",
            "benchmarks/calls/h200_call_s28c.sh", "benchmarks/calls/h200_call_s28e.sh",
            "benchmarks/calls/h200_call_s29b.sh", "benchmarks/calls/h200_call_s30a.sh",
            "benchmarks/calls/h200_call_s30b.sh", "benchmarks/calls/h200_call_s30c.sh",
            "benchmarks/calls/h200_call_s30d.sh", "benchmarks/calls/h200_call_s30e.sh",
            "benchmarks/calls/h200_call_s30f.sh", "benchmarks/calls/h200_call_s30g.sh",
            "benchmarks/calls/h200_call_s30h.sh",
            "benchmarks/calls/h200_call_s31b.sh", "benchmarks/calls/h200_call_s31c.sh",
            "benchmarks/calls/h200_call_s31d.sh", "benchmarks/calls/h200_call_s32a.sh",
            "benchmarks/calls/h200_call_s33a.sh", "benchmarks/calls/h200_call_s33b.sh",
            "benchmarks/calls/h200_call_s33c.sh", "benchmarks/calls/h200_call_s33d.sh",
            "benchmarks/calls/h200_call_s33e.sh", "benchmarks/calls/h200_call_s34a.sh",
            "benchmarks/calls/h200_call_s34b.sh", "benchmarks/calls/h200_call_s34c.sh",
            "benchmarks/calls/h200_call_s34d.sh", "benchmarks/calls/h200_call_s34e.sh",
            "benchmarks/calls/h200_call_s35a.sh", "benchmarks/calls/h200_call_s35b.sh",
            "benchmarks/calls/h200_call_s35c.sh", "benchmarks/calls/h200_call_s35d.sh",
            "benchmarks/calls/h200_call_s36a.sh", "benchmarks/calls/h200_call_s36b.sh",
            "benchmarks/calls/h200_call_s36c.sh", "benchmarks/calls/h200_call_s36d.sh",
            "benchmarks/calls/h200_call_s36e.sh", "benchmarks/calls/h200_call_s36f.sh",
            "benchmarks/calls/h200_call_s36g.sh",
            "benchmarks/calls/h200_call_s37c.sh", "benchmarks/calls/h200_call_s37e.sh",
            "benchmarks/calls/h200_call_s37f.sh", "benchmarks/calls/h200_call_s39a.sh",
            "benchmarks/calls/h200_call_s39b.sh", "benchmarks/calls/h200_call_s40a.sh",
            "benchmarks/calls/h200_call_s41a.sh", "benchmarks/calls/h200_call_s41b.sh",
            "benchmarks/calls/h200_call_s41c.sh", "benchmarks/calls/h200_call_s42a.sh",
            "benchmarks/calls/h200_call_s42b.sh", "benchmarks/calls/h200_call_s42c.sh",
            "benchmarks/calls/h200_call_s42d.sh", "benchmarks/calls/h200_call_s42e.sh",
            "benchmarks/calls/h200_call_s42f.sh", "benchmarks/calls/h200_call_s43a.sh",
            "benchmarks/calls/h200_call_s43b.sh", "benchmarks/calls/h200_call_s43c.sh",
            "benchmarks/calls/h200_call_s43d.sh", "benchmarks/calls/h200_call_s44a.sh",
            "benchmarks/calls/h200_call_s45a.sh", "benchmarks/calls/h200_call_s45b.sh",
            "benchmarks/calls/h200_call_s49a.sh"]
# (h200_call_s34f.sh to s34j.sh need commit 0817c6a: parts16.py and combine16_time.py set GluonKernel.parts_f16 and
# the combine's PARTS_F16, measured and removed in session 35. h200_call_s37b.sh's two-gatherer configs and
# h200_call_s37d.sh's ready_parts.py need commit 1f3eff6: measured and removed in session 37; s37b's gather_probe.py ran
# on its own, as session 37's calls 2 and 4. h200_call_s38a.sh and s38b.sh need commit 25d5c84: GluonKernel.pairs,
# measured in session 39 and removed. h200_call_s42f.sh needs commit 621f5db: the raw kernel's split-K, measured in
# session 42 and removed. h200_call_s48c.sh, never run, is at commit 8c6d0cb: h200_call_s49a.sh has its steps.)
CUDA_AT_IMPORT = {"benchmarks/gpu_correctness.py"}  # builds its problems on the GPU at import


def _scripts() -> list[str]:
    found = []
    for call in PREPARED:
        for path in re.findall(r"python3 (benchmarks/\S+\.py)", (ROOT / call).read_text()):
            if path not in found:
                found.append(path)
    return found


@pytest.mark.parametrize("call", PREPARED)
def test_prepared_call_scripts_parse(call):
    subprocess.run(["bash", "-n", str(ROOT / call)], check=True)


def test_the_prepared_calls_run_python_scripts():
    assert "benchmarks/calls/stream_check.py" in _scripts() and len(_scripts()) >= 6


@pytest.mark.parametrize("script", _scripts())
def test_prepared_python_scripts_import(script, monkeypatch):
    py_compile.compile(str(ROOT / script), doraise=True)
    if script in CUDA_AT_IMPORT:
        return
    folder = str((ROOT / script).parent)
    monkeypatch.syspath_prepend(folder)  # (the scripts import their neighbours, as `python3 path` runs them)
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    name = Path(script).stem
    for mod in [m for m in sys.modules if m == name]:
        monkeypatch.delitem(sys.modules, mod)
    importlib.import_module(name)
