"""Check that a template change leaves the shipped entries' kernels as they were measured.

A table's entries are trusted only under the template hash they were measured with. When the
template gains an option that is off in those entries, the table may be re-stamped with the new
hash if every entry's compiled variant gives the same PTX from both templates (debug info aside:
line numbers and debug-scope labels move). This compiles each distinct variant of the table's entries
that the old template can express, from both, for the table's arch (no GPU needed).

  python benchmarks/ptx_same.py tuned/NVIDIA_H200/sparse_mla.json --old-rev 11c3a0e^

``--gluon`` does the same for the table's Gluon entries (Config.gluon) and the Gluon template.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

os.environ["TRITON_INTERPRET"] = "0"


def _strip_debug(ptx: str) -> str:
    ptx = re.sub(r"^\s*\.loc\s.*$", "", ptx, flags=re.M)
    ptx = re.sub(r"^\s*\.file\s.*$", "", ptx, flags=re.M)
    # $L__tmpN: labels anchor debug scopes (one per inlined call) and are referenced only from the
    # .debug sections; their numbering moves when a helper is factored out (branch targets are $L__BB).
    ptx = re.sub(r"^\$L__tmp\d+:$", "", ptx, flags=re.M)
    ptx = ptx.split("\t.section\t.debug", 1)[0]
    return "\n".join(line for line in ptx.splitlines() if line.strip() and not line.startswith("//"))


def _module(source: str, name: str):
    d = tempfile.mkdtemp()
    path = os.path.join(d, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("--old-rev", required=True, help="git revision of the template the entries were measured with")
    ap.add_argument("--gluon", action="store_true", help="the Gluon entries and templates/sparse_mla_gluon.py.jinja")
    ap.add_argument("--old-default", action="append", default=[], metavar="NAME=VALUE",
                    help="a name the old template reads that the context no longer has (a removed option), "
                         "at the value the entries ran with (True/False/int)")
    args = ap.parse_args()
    old_defaults = {}
    for arg in args.old_default:
        name, value = arg.split("=", 1)
        old_defaults[name] = {"True": True, "False": False}.get(value, int(value) if value.isdigit() else value)
    from sparsemla.gen import render
    from sparsemla.gen.compile_check import compile_module
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.search_space import compiled_variant
    from sparsemla.gen.spec import Config, KernelSpec, config_label

    template = "sparse_mla_gluon.py.jinja" if args.gluon else "sparse_mla.py.jinja"
    old_text = subprocess.run(["git", "show", f"{args.old_rev}:templates/{template}"],
                              capture_output=True, text=True, check=True).stdout
    table = json.load(open(args.table))
    variants = set()
    for key, buckets in table["entries"].items():
        for e in buckets.values():
            c = Config.from_dict(e["config"])
            if args.gluon:
                kept = c.gluon
            else:  # (a Gluon entry runs the other template)
                kept = e.get("backend", "triton") == "triton" and not c.gluon \
                    and c == Config.from_dict({**e["config"], "l2_prefetch": 0})
            if kept:
                variants.add((key, compiled_variant(c)))
    same = differ = 0
    for i, (key, cfg) in enumerate(sorted(variants, key=lambda v: (v[0], repr(v[1]))), 1):
        spec = KernelSpec.from_key(key)
        # what gen.render renders for the template
        unit = GluonKernel.for_config(spec, cfg) if args.gluon else spec
        ctx = dict(unit.template_context(), spec=unit, spec_key=unit.key, version="check")
        old = _module(render._env().from_string(old_text).render(**{**old_defaults, **ctx}), f"old_{i}")
        new = _module(render.render_source(unit), f"new_{i}")
        ok = (_strip_debug(compile_module(old, spec, cfg, spec.arch).asm["ptx"])
              == _strip_debug(compile_module(new, spec, cfg, spec.arch).asm["ptx"]))
        same += ok
        differ += not ok
        print(f"[{i}/{len(variants)}] {key} {config_label(cfg)}: {'same' if ok else 'DIFFERENT'}", flush=True)
    print(f"{same} same, {differ} different of {len(variants)} variants")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
