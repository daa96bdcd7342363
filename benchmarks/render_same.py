"""Whether a template change leaves every Gluon variant's rendering byte-identical: renders each variant the suite's
formats can take (every head count, tiling, pdl_wait and profile, the H200 table's entries among them) with the
working tree's template and with the one at a git revision, and counts the differences. Run from the repository root
after a template change that adds a field which is off by default, or removes one (the revision's template then
renders with each --removed field off); then restamp the tables (benchmarks/restamp.py):

  python benchmarks/render_same.py [REV] [--removed FIELD ...]   (REV: default HEAD)
"""
import argparse
import dataclasses
import subprocess
import sys

import sparsemla.gen.render as render
from sparsemla.gen.gluon import GluonKernel, _tiling_problem
from sparsemla.gen.spec import KernelSpec
from sparsemla.gen.suite import HEADS, SUITE_FORMATS

TEMPLATES = ("sparse_mla_gluon.py.jinja", "sparse_mla_gluon_raw.py.jinja")


def variants():
    """Every GluonKernel of the suite's specs: head blocks, loaders, stages, pdl_wait, profile and raw."""
    for kv_format, d_qk, page in SUITE_FORMATS.values():
        for heads in HEADS:
            spec = KernelSpec(kv_format=kv_format, d_qk=d_qk, num_heads=heads, page_size=page)
            for block_h in (16, 32, 64):
                for loaders in (1, 2):
                    for stages in (1, 2):
                        if _tiling_problem(block_h, loaders, stages):
                            continue
                        for pdl_wait in (False, True):
                            for profile in (False, True):
                                for raw in (False, True):
                                    try:
                                        yield GluonKernel(spec, block_h, loaders, stages, pdl_wait=pdl_wait,
                                                          profile=profile, raw=raw)
                                    except ValueError:
                                        continue


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rev", nargs="?", default="HEAD")
    ap.add_argument("--removed", nargs="*", default=[], help="template fields the working tree no longer has")
    args = ap.parse_args()
    rev = args.rev
    old = {name: subprocess.run(["git", "show", f"{rev}:templates/{name}"], capture_output=True, text=True,
                                check=True).stdout for name in TEMPLATES}
    new_source = render.template_source
    new_context = GluonKernel.template_context
    old_context = lambda kernel: {**new_context(kernel), **{name: False for name in args.removed}}  # noqa: E731
    same = differ = 0
    for kernel in variants():
        new = render.render_source(kernel)
        render.template_source = lambda name: old[name] if name in old else new_source(name)
        GluonKernel.template_context = old_context
        try:
            before = render.render_source(dataclasses.replace(kernel))
        finally:
            render.template_source = new_source
            GluonKernel.template_context = new_context
        if new == before:
            same += 1
        else:
            differ += 1
            print("differs:", kernel.key)
    print(f"{same} renders byte-identical to {rev}'s template, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
