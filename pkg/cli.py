"""The ``sparsemla`` command: demo, render, bench, tune, tune-paging, info."""
from __future__ import annotations

import argparse
import sys


def _render(argv):
    from sparsemla.gen.paging import spec_from_key as paging_spec_from_key
    from sparsemla.gen.render import render_source
    from sparsemla.gen.spec import KernelSpec
    ap = argparse.ArgumentParser(prog="sparsemla gen render",
                                 description="Write the generated Triton source of a spec for a person to read.")
    ap.add_argument("--spec", required=True, help="a spec key, e.g. " + KernelSpec().key + " (attention), "
                    "or convert_indices-sm90-p64-k2048 (a paging kernel)")
    ap.add_argument("--out", default=".", help="directory to write <module_name>.py into")
    args = ap.parse_args(argv)
    import os
    # The key's first part names its family: the attention's or a paging kernel's.
    if args.spec.split("-")[0] in ("convert_indices", "pack_valid_prefix", "page_split"):
        from_key = paging_spec_from_key
    else:
        from_key = KernelSpec.from_key
    try:
        spec = from_key(args.spec)
    except ValueError as e:
        ap.error(f"--spec: {e}")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, spec.module_name + ".py")
    with open(path, "w") as f:
        f.write(render_source(spec))
    print(path)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    cmds = ("demo", "gen render", "bench", "tune", "tune-paging", "info")
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: sparsemla {demo | gen render --spec KEY --out DIR | bench | tune | tune-paging | info} [options]")
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        from sparsemla.demo import demo_main
        return demo_main(rest)
    if cmd == "gen":
        if not rest or rest[0] != "render":
            print("usage: sparsemla gen render --spec KEY --out DIR", file=sys.stderr)
            return 2
        return _render(rest[1:])
    if cmd == "bench":
        from sparsemla.bench import bench_main
        return bench_main(rest)
    if cmd == "tune":
        from sparsemla.gen.tune import tune_main
        return tune_main(rest)
    if cmd == "tune-paging":
        from sparsemla.gen.paging_tune import tune_paging_main
        return tune_paging_main(rest)
    if cmd == "info":
        from sparsemla.runtime.info import info_main
        return info_main(rest)
    print(f"sparsemla: unknown command {cmd!r}; expected one of {cmds}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
