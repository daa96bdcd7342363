"""A picture of a benchmark suite's results (``sparsemla bench``'s or a merged JSON): per KV format, our speed
against FlashInfer measured in the same process, and the fraction of the roofline, against T, one line per head
count. Needs matplotlib (``pip install 'sparsemla[plot]'``).

    python -m sparsemla.bench_plot benchmarks/results/NVIDIA_H200.json   # writes NVIDIA_H200.png beside it
"""
from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from sparsemla.gen.render import atomic_write

FORMAT_ORDER = ("bf16", "bf16_nope", "fp8", "fp8_nope", "fp8_ds_mla", "model1")
SPEEDUP_TICKS = (0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 4, 6)


def _title(res: dict) -> str:
    runs = res.get("runs")
    p = (runs[-1] if runs else res)["provenance"]
    return (f"sparse MLA, top-k {res['rows'][0]['topk']}, on {p['gpu']} (Triton {p['triton']}, "
            f"FlashInfer {p['flashinfer']}; {len(runs) if runs else 1} run(s), last {p['date'][:10]})")


def plot_suite(res: dict, path: str | Path) -> Path:
    """Write the figure of ``res`` (rows as ``sparsemla bench`` writes them) to ``path`` (PNG); returns it."""
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullLocator

    rows = res["rows"]
    formats = [f for f in FORMAT_ORDER if any(r["format"] == f for r in rows)]
    formats += sorted({r["format"] for r in rows} - set(formats))
    heads = sorted({r["H"] for r in rows})
    colors = dict(zip(heads, plt.get_cmap("viridis")([i / max(len(heads) - 1, 1) for i in range(len(heads))])))
    fig, axes = plt.subplots(2, len(formats), figsize=(3.3 * len(formats), 6.4), sharex=True, squeeze=False)
    for col, fmt in enumerate(formats):
        top, bottom = axes[0][col], axes[1][col]
        for H in heads:
            pts = sorted((r["T"], r) for r in rows if r["format"] == fmt and r["H"] == H)
            if not pts:
                continue
            ts = [t for t, _ in pts]
            bottom.plot(ts, [r.get("roofline") for _, r in pts], "o-", ms=3, color=colors[H], label=f"H={H}")
            fi = [(t, r["speedup"]) for t, r in pts if r.get("speedup")]
            if fi:
                top.plot(*zip(*fi), "o-", ms=3, color=colors[H], label=f"H={H}")
        top.set_title(fmt)
        if top.lines:
            top.axhline(1.0, color="gray", lw=0.8, ls="--")
            top.set_yscale("log")
            top.yaxis.set_major_locator(FixedLocator(SPEEDUP_TICKS))
            top.yaxis.set_major_formatter(FormatStrFormatter("%gx"))
            top.yaxis.set_minor_locator(NullLocator())
        else:
            top.text(0.5, 0.5, "FlashInfer has no\nkernel for it here", ha="center", va="center",
                     transform=top.transAxes, color="gray")
            top.set_yticks([])
        bottom.set_ylim(0, 1)
        bottom.set_xscale("log", base=2)
        bottom.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        bottom.set_xlabel("query tokens T")
        for ax in (top, bottom):
            ax.grid(True, which="major", lw=0.4, alpha=0.5)
    axes[0][0].set_ylabel("FlashInfer time / ours\n(> 1: we are faster)")
    axes[1][0].set_ylabel("fraction of the roofline\n(copy or bf16 matmul ceiling)")
    axes[1][0].legend(fontsize=8, loc="upper left")
    fig.suptitle(_title(res), fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    path = Path(path)
    atomic_write(path, buf.getvalue())
    return path


def try_plot(res: dict, base: str) -> str | None:
    """Write ``base``.png if matplotlib is installed; the Markdown line that shows it, or None."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("(no plot: matplotlib is not installed; pip install 'sparsemla[plot]')")
        return None
    path = plot_suite(res, base + ".png")
    return f"![FlashInfer time / ours and roofline fraction per format, T and H]({path.name})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sparsemla.bench_plot", description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a results JSON of `sparsemla bench` or benchmarks/merge_bench.py")
    ap.add_argument("--out", help="the PNG to write (default: the JSON's path with .png)")
    args = ap.parse_args(argv)
    res = json.loads(Path(args.results).read_text())
    print(plot_suite(res, args.out or Path(args.results).with_suffix(".png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
