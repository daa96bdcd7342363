"""The benchmark suite's picture: written from result rows, with and without FlashInfer's times."""
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from sparsemla.bench_plot import plot_suite, try_plot  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _rows():
    rows = []
    for fmt, fi in (("bf16", True), ("model1", False)):
        for H in (16, 128):
            for T in (1, 4, 64, 4096):
                r = dict(format=fmt, T=T, H=H, topk=2048, us=10.0 * T, roofline=min(1.0, T / 5000))
                if fi:
                    r["speedup"] = 0.9 + T / 4096
                rows.append(r)
    return rows


def test_a_plot_of_rows_with_and_without_flashinfer(tmp_path):
    res = dict(rows=_rows(), provenance=dict(gpu="Test GPU", triton="3.x", flashinfer=None, date="2026-12-04"))
    path = plot_suite(res, tmp_path / "suite.png")
    assert path.read_bytes().startswith(PNG)
    line = try_plot(res, str(tmp_path / "again"))
    assert line.endswith("(again.png)") and (tmp_path / "again.png").read_bytes().startswith(PNG)
    assert not list(tmp_path.glob("*.tmp"))  # written atomically


def test_the_committed_suite_plots(tmp_path):
    res = json.loads((RESULTS / "NVIDIA_H200.json").read_text())
    assert plot_suite(res, tmp_path / "h200.png").stat().st_size > 20_000
