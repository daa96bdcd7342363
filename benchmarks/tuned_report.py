"""Markdown report of a tuned table: per spec and bucket, the default config's time, the tuned
time, FlashInfer's time from the same run, the backend chosen, the config and the trial count.

  python benchmarks/tuned_report.py tuned/NVIDIA_H200/sparse_mla.json > benchmarks/results/tuned_NVIDIA_H200.md
"""
from __future__ import annotations

import json
import sys

from sparsemla.gen.spec import KernelSpec, config_label
from sparsemla.gen.suite import SUITE_FORMATS


def label(spec: KernelSpec) -> str:
    for name, (fmt, d_qk, page) in SUITE_FORMATS.items():
        if (spec.kv_format, spec.d_qk, spec.page_size) == (fmt, d_qk, page):
            return name
    return spec.key


def _f(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def report(table: dict) -> str:
    p = table["provenance"]
    rows = []
    # the tables' config before the run, timed in its study (entries tuned since session 54 name it)
    was = any(e.get("incumbent") for buckets in table["entries"].values() for e in buckets.values())
    for key, buckets in table["entries"].items():
        spec = KernelSpec.from_key(key)
        for b, e in buckets.items():
            speedup = e["default_time_us"] / e["time_us"] if e.get("default_time_us") and e.get("time_us") else None
            fi, ours = e.get("flashinfer_time_us"), e.get("triton_bench_us")
            before = f"{config_label(e['incumbent'])} {_f(e.get('incumbent_time_us'))}" if e.get("incumbent") else "-"
            rows.append((label(spec), spec.num_heads, int(b),
                         f"| {label(spec)} | {b} | {spec.num_heads} | {_f(e.get('default_time_us'))} | "
                         f"{_f(e.get('time_us'))} | {_f(speedup, '.2f')} | {_f(ours)} | {_f(fi)} | "
                         f"{_f(fi / ours if fi and ours else None, '.2f')} | {e['backend']} | "
                         f"{config_label(e['config'])} | {e.get('trials', 0)} |" + (f" {before} |" if was else "")))
    order = list(SUITE_FORMATS)
    rows.sort(key=lambda r: (order.index(r[0]) if r[0] in order else 99, r[1], r[2]))
    measured = f", measured with {p['measured_with_template']}" if p.get("measured_with_template") else ""
    head = [f"# Tuned configs on {p.get('gpu_name')} ({table['gpu']})", "",
            f"torch {p.get('torch')}, CUDA {p.get('cuda')}, Triton {p.get('triton')}, FlashInfer "
            f"{p.get('flashinfer')}, sparsemla {p.get('sparsemla')} (template {p.get('template_hash')}{measured}), "
            f"driver {p.get('driver')}. {len(rows)} entries.", "",
            "default / tuned: kernel time per call by CUDA-graph replay over rotating inputs (the tuner's "
            "measurement; the default config is the study's first trial). ours / FlashInfer per call: "
            "do_bench of one eager call through sparse_mla (host work included; FlashInfer's plan() is "
            "cached while the lengths stay the same), both in the same process; the backend is the faster "
            "of the two.", "",
            "| format | T | H | default us | tuned us | tuned speedup | ours per call us | FlashInfer per call us | "
            "FI/ours | backend | config | trials |" + (" before the run, us |" if was else ""),
            "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if was else "")]
    if was:
        head[-4] += (" Before the run: the config the tables held for the bucket when its study began, timed in "
                     "that study (\"-\" after it: not timed).")
    return "\n".join(head + [r[3] for r in rows]) + "\n"


if __name__ == "__main__":
    print(report(json.load(open(sys.argv[1]))), end="")
