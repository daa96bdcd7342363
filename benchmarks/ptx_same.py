"""Check that a template change leaves the shipped entries' kernels as they were measured.

A table's entries are trusted only under the template hash they were measured with. When the
template gains an option that is off in those entries, the table may be re-stamped with the new
hash if every entry's compiled variant gives the same PTX from both templates (debug info aside:
line numbers and debug-scope labels move). This compiles each distinct variant of the table's entries
that the old template can express, from both, for the table's arch (no GPU needed).

  python benchmarks/ptx_same.py tuned/NVIDIA_H200/sparse_mla.json --old-rev 11c3a0e^

``--gluon`` does the same for the table's Gluon entries (Config.gluon) and the Gluon templates (the raw-row kernel's
where the runtime runs it), each in the variant the runtime runs for its bucket (runtime/triton_backend.gluon_fields
on ``--sms`` SMs, the H200's 132), with the launch constexprs it runs it with (PDL, FUSED:
runtime/triton_backend.launch_constexprs; before session 26 both were compiled off).
``--combine`` also compares the split-K combine kernel of every spec in the table (2, 16 and 32 splits, with
and without PDL); ``--new-default NAME=VALUE`` gives a constexpr the new template's combine added at the
value the runtime passes, and ``--old-default`` one the old combine took that the new one no longer has.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
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
    ap.add_argument("--combine", action="store_true", help="also the combine kernel of every spec")
    ap.add_argument("--sms", type=int, default=132, help="the table's GPU's SMs, for the runtime's Gluon variants")
    ap.add_argument("--new-default", action="append", default=[], metavar="NAME=VALUE",
                    help="with --combine: a constexpr the new combine takes, at the runtime's value")
    args = ap.parse_args()

    def values(pairs):
        out = {}
        for arg in pairs:
            name, value = arg.split("=", 1)
            out[name] = {"True": True, "False": False}.get(value, int(value) if value.isdigit() else value)
        return out
    old_defaults, new_defaults = values(args.old_default), values(args.new_default)
    from sparsemla.gen import render
    from sparsemla.gen.compile_check import compile_module
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.search_space import compiled_variant
    from sparsemla.gen.spec import Config, KernelSpec, config_label

    from compile_report import runtime_launch, runtime_variant  # benchmarks/ is the script's folder, so on sys.path

    old_texts = {}

    def old_template(name: str) -> str:
        if name not in old_texts:
            old_texts[name] = subprocess.run(["git", "show", f"{args.old_rev}:templates/{name}"],
                                             capture_output=True, text=True, check=True).stdout
        return old_texts[name]
    old_text = old_template("sparse_mla.py.jinja")
    table = json.load(open(args.table))
    variants = set()
    for key, buckets in table["entries"].items():
        for b, e in buckets.items():
            c = Config.from_dict(e["config"])
            if args.gluon:
                kept = c.gluon
            else:  # (a Gluon entry runs the other template)
                kept = e.get("backend", "triton") == "triton" and not c.gluon \
                    and c == Config.from_dict({**e["config"], "l2_prefetch": 0})
            if kept:
                spec = KernelSpec.from_key(key)
                fields = runtime_variant(spec, c, int(b), args.sms) if args.gluon else {}
                launch = runtime_launch(spec, c, int(b), args.sms) if args.gluon else {}
                variants.add((key, compiled_variant(c), tuple(sorted(fields)), tuple(sorted(launch.items()))))
    same = differ = 0
    for i, (key, cfg, fields, launch) in enumerate(sorted(variants, key=lambda v: (v[0], repr(v[1]), v[2], v[3])), 1):
        spec = KernelSpec.from_key(key)
        # what gen.render renders for the template
        unit = GluonKernel.for_config(spec, cfg, **dict.fromkeys(fields, True)) if args.gluon else spec
        ctx = dict(unit.template_context(), spec=unit, spec_key=unit.key, version="check")
        text = old_template(unit.template) if args.gluon else old_text  # (the raw-row kernel's is its own)
        old = _module(render._env().from_string(text).render(**{**old_defaults, **ctx}), f"old_{i}")
        new = _module(render.render_source(unit), f"new_{i}")
        ok = (_strip_debug(compile_module(old, spec, cfg, spec.arch, **dict(launch)).asm["ptx"])
              == _strip_debug(compile_module(new, spec, cfg, spec.arch, **dict(launch)).asm["ptx"]))
        same += ok
        differ += not ok
        print(f"[{i}/{len(variants)}] {key} {config_label(cfg)}{''.join(' ' + f for f in fields)}"
              f"{''.join(f' {k}={v}' for k, v in launch)}: "
              f"{'same' if ok else 'DIFFERENT'}", flush=True)
    print(f"{same} same, {differ} different of {len(variants)} variants")
    if args.combine and not args.gluon:
        c_same, c_differ = _combine_same(table, old_text, old_defaults, new_defaults)
        same, differ = same + c_same, differ + c_differ
        print(f"combine: {c_same} same, {c_differ} different")
    return 1 if differ else 0


def _combine_same(table, old_text, old_defaults, new_defaults) -> tuple[int, int]:
    """The combine kernel's PTX from both templates, per spec of the table, split count and PDL."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from sparsemla.gen import render
    from sparsemla.gen.compile_check import ARCHS, _signature
    from sparsemla.gen.spec import KernelSpec, next_pow2
    from sparsemla.runtime.triton_backend import combine_columns

    same = differ = 0
    for i, key in enumerate(sorted(table["entries"]), 1):
        spec = KernelSpec.from_key(key)
        ctx = dict(spec.template_context(), spec=spec, spec_key=spec.key, version="check")
        old = _module(render._env().from_string(old_text).render(**{**old_defaults, **ctx}), f"old_c{i}")
        new = _module(render.render_source(spec), f"new_c{i}")
        for splits, pdl, parts_first in itertools.product((2, 16, 32), (False, True), (False, True)):
            ptx = []
            for mod, extra in ((old, old_defaults), (new, new_defaults)):  # (filtered below: constexprs only)
                fn = mod.sparse_mla_combine
                consts = dict(NUM_SPLITS=splits, SPLITS_P2=next_pow2(splits),
                              BLOCK_DV=combine_columns(splits, spec.d_v), PDL=pdl, PARTS_FIRST=parts_first, **extra)
                consts = {k: v for k, v in consts.items() if k in fn.arg_names}  # (a template before the knob)
                sig, attrs = _signature(fn, spec, consts)
                compiled = triton.compile(ASTSource(fn, sig, consts, attrs),
                                          target=GPUTarget("cuda", ARCHS[spec.arch].cc, 32),
                                          options={"num_warps": 4})
                ptx.append(_strip_debug(compiled.asm["ptx"]))
            ok = ptx[0] == ptx[1]
            same += ok
            differ += not ok
            print(f"[combine {i}/{len(table['entries'])}] {key} s{splits} pdl={pdl} parts_first={parts_first}: "
                  f"{'same' if ok else 'DIFFERENT'}", flush=True)
    return same, differ


if __name__ == "__main__":
    sys.exit(main())
