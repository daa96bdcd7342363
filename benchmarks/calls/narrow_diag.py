"""Issue 7 experiment (session 14): where the narrow Gluon kernel's time goes at 16 heads, T=256.

Variants of the rendered module (text edits of its source, for timing only: their outputs are wrong):
  base     the kernel as shipped;
  no_mma   group M issues no wgmma (S = 0): the loading group and memory alone;
  hot      the base kernel with every index in the first 2048 slots (L2-resident): the loading
           group's conversion and M without HBM latency.
Each is timed like a tuning trial (gen.gpu_measure: CUDA-graph replay over rotating input sets).
Run on the GPU after `pip install .`: python3 benchmarks/calls/narrow_diag.py
"""
import importlib.util
import os
import sys
import tempfile

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.gen import render
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.gpu_measure import _calls, time_calls, timing_sets
from sparsemla.gen.spec import Config, KernelSpec
from sparsemla.runtime.api import clear_call_cache

NO_MMA = [  # group M's wgmma lines (S stays the zeros it starts from; the accumulator stays 0)
    "        s = warpgroup_mma(kn.index(stage), qn.permute((1, 0)), s, use_acc=False, is_async=True)\n",
    "        s = warpgroup_mma(kr.index(stage), qr.permute((1, 0)), s, is_async=True)\n",
    "        s = warpgroup_mma_wait(0, deps=[s])\n",
    "        acc = warpgroup_mma(kn.index(stage).permute((1, 0)), pt.index(stage), acc, is_async=True)\n",
    "        acc = warpgroup_mma_wait(0, deps=[acc])\n",
]


def variant_module(unit, name):
    src = render.render_source(unit)
    if name == "no_mma":
        for line in NO_MMA:
            src = src.replace(line, "")
    path = os.path.join(tempfile.mkdtemp(), f"{unit.module_name}_{name}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"{unit.module_name}_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main():
    dev = torch.device("cuda")
    real_load = tb.load_module
    rows = [("fp8_e4m3", 512, 1), ("fp8_e4m3", 576, 1), ("fp8_ds_mla", 576, 64), ("model1", 512, 64),
            ("auto", 576, 1)]
    print("| format | d_qk | config | base us | no_mma us | hot us |")
    print("|---|---|---|---|---|---|")
    for fmt, d_qk, page in rows:
        spec = KernelSpec(kv_format=fmt, d_qk=d_qk, num_heads=16, page_size=page)
        sets = timing_sets(spec, 256, dev)
        hot = [dict(kw, indices=kw["indices"] % 2048) for kw in sets]
        for warps in ((8, 12) if fmt != "auto" else (8,)):
            cfg = Config(16, 64, 1, warps, 2, gluon=True)
            unit = GluonKernel.for_config(spec, cfg)
            res = {}
            for name, inputs in (("base", sets), ("no_mma", sets), ("hot", hot)):
                mod = variant_module(unit, "no_mma" if name == "no_mma" else "base")
                tb.load_module = lambda u, mod=mod: mod if isinstance(u, GluonKernel) else real_load(u)
                clear_call_cache()
                try:
                    res[name] = f"{time_calls(_calls(inputs, cfg))[0]:.1f}"
                except Exception as e:  # noqa: BLE001 (report and go on)
                    res[name] = f"error {type(e).__name__}: {str(e)[:80]}"
                finally:
                    tb.load_module = real_load
                    clear_call_cache()
            print(f"| {fmt} | {d_qk} | h16 w{warps} | {res['base']} | {res['no_mma']} | {res['hot']} |", flush=True)


if __name__ == "__main__":
    main()
