"""What each warp of a shipped kernel issues per tile: the innermost loops of its SASS (gen.compile_check.sass_loops)
with their instruction mix, for rows of a tuned table as the runtime runs them (its Gluon variant on --sms SMs), and
for variants of their Gluon modules (GluonKernel fields replaced). No GPU needed; run it with the Triton the table
was measured with (the H200's: 3.6).

  python benchmarks/sass_loops.py model1:16:256 fp8:16:256 [--variant bf16_scale=False] [--table PATH]

Rows are FORMAT:H:T (gen/suite.py's SUITE_FORMATS). Session 31 used it to compare the loading and computing loops of
the narrow kernel across the fp8 formats (benchmarks/results/session31/README.md).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls"))

from gluon_variant import parse_variant  # noqa: E402  (benchmarks/calls: the variants are written as it takes them)
from sparsemla.gen.compile_check import compile_module, sass_loops, sass_text  # noqa: E402
from sparsemla.gen.gluon import GluonKernel  # noqa: E402
from sparsemla.gen.render import load_compilable_module  # noqa: E402
from sparsemla.gen.spec import Config, KernelSpec, config_label  # noqa: E402
from sparsemla.gen.suite import SUITE_FORMATS  # noqa: E402
from sparsemla.runtime.triton_backend import gluon_fields  # noqa: E402


def loops_of(spec: KernelSpec, cfg: Config, tokens: int, sms: int, fields: dict) -> list:
    """The innermost loops of the config's kernel as the runtime compiles it, with ``fields`` replaced."""
    if not cfg.gluon:
        raise ValueError(f"{spec.key} {config_label(cfg)}: not a Gluon config (only those are compared here)")
    launch = gluon_fields(spec, cfg, tokens * -(-spec.num_heads // cfg.block_h) * cfg.num_splits, sms)
    unit = dataclasses.replace(GluonKernel.for_config(spec, cfg, **launch), **fields)
    compiled = compile_module(load_compilable_module(unit), spec, cfg, spec.arch)
    return sass_loops(sass_text(compiled.asm["cubin"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", help="FORMAT:H:T")
    ap.add_argument("--variant", action="append", default=[], help="GluonKernel fields, FIELD=VALUE[+...]")
    ap.add_argument("--table", default="tuned/NVIDIA_H200/sparse_mla.json")
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args()
    entries = json.load(open(args.table))["entries"]  # (read as is: a stale template hash does not matter here)
    print("| row | config | variant | loop | instructions | most frequent |\n|---|---|---|---|---|---|")
    for row in args.rows:
        fmt, H, T = row.split(":")
        kv_format, d_qk, page = SUITE_FORMATS[fmt]
        spec = KernelSpec(kv_format=kv_format, d_qk=d_qk, num_heads=int(H), page_size=page)
        bucket = min((int(b) for b in entries[spec.key] if int(b) >= int(T)), default=max(map(int, entries[spec.key])))
        cfg = Config.from_dict(entries[spec.key][str(bucket)]["config"])
        for variant in ["shipped"] + args.variant:
            fields = {} if variant == "shipped" else parse_variant(variant)
            for lo, hi, ops in loops_of(spec, cfg, int(T), args.sms, fields):
                top = ", ".join(f"{k} {v}" for k, v in list(ops.items())[:8])
                print(f"| {row} | {config_label(cfg)} | {variant} | {lo:#x}-{hi:#x} | {sum(ops.values())} | {top} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
