"""Re-stamp tuned tables with the current template hash, after a template change that leaves their
entries' kernels as measured (check that first: benchmarks/ptx_same.py, with --gluon for the Gluon
entries). The note saying why is appended to each table's template_note. A paging table
(``family: paging``) gets the paging templates' hash.

  python benchmarks/restamp.py "the Gluon template gains ... ; its entries' PTX identical" tuned/*/sparse_mla.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from merge_tuned import append_note  # benchmarks/ is the script's folder, so on sys.path

from sparsemla.gen.paging_table import paging_template_hash
from sparsemla.gen.render import atomic_write, attention_template_hash


def restamp(path: str, why: str) -> str:
    table = json.load(open(path))
    prov = table["provenance"]
    new = paging_template_hash() if table.get("family") == "paging" else attention_template_hash()
    old = prov.get("template_hash")
    if old == new:
        return f"{path}: already {new}"
    append_note(prov, f"re-stamped {old} -> {new}: {why}")
    prov["template_hash"] = new
    atomic_write(Path(path), json.dumps(table, indent=1) + "\n")
    return f"{path}: {old} -> {new}"


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for p in sys.argv[2:]:
        print(restamp(p, sys.argv[1]))
