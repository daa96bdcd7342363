"""What the compiler made of every config a tuned table ships: shared memory, registers and spills
(ptxas -v), wgmma in the PTX, and HGMMA / QGMMA (Hopper's warpgroup MMA on 16- / 8-bit operands), HMMA,
LDGSTS (cp.async) and STL/LDL (spill stores/loads) in the SASS. No GPU needed: each config is compiled for the table's
arch with Triton's GPU pipeline. Run it with the Triton the table was measured with (the H200
table: Triton 3.6), since another Triton compiles other code.

  python benchmarks/compile_report.py tuned/NVIDIA_H200/sparse_mla.json [--jobs 2] \
      > benchmarks/results/compile_NVIDIA_H200.md
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from concurrent.futures import ProcessPoolExecutor

from tuned_report import label  # benchmarks/ is the script's folder, so on sys.path

from sparsemla.gen.compile_check import _ptxas_resources, compile_kernel, sass_opcode_counts
from sparsemla.gen.spec import Config, KernelSpec, config_label

OPCODES = ("HGMMA", "QGMMA", "HMMA", "LDGSTS", "STL", "LDL")


def resources(job: tuple[str, dict, str, dict]) -> dict:
    """Compile one (spec key, config, arch, Gluon variant fields and launch constexprs); the numbers, or the
    error."""
    key, cfg, arch, variant = job
    try:
        compiled = compile_kernel(KernelSpec.from_key(key), Config(**cfg), arch, **variant)
        regs, spills = _ptxas_resources(compiled.asm["ptx"], arch)
        return dict(shared=compiled.metadata.shared, regs=regs, spills=spills,
                    wgmma=len(re.findall(r"\bwgmma\.mma_async", compiled.asm["ptx"])),
                    **sass_opcode_counts(compiled.asm["cubin"], OPCODES))
    except Exception as e:  # noqa: BLE001 (a shipped config that no longer builds is a finding)
        return dict(error=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")


def runtime_variant(spec: KernelSpec, cfg: Config, tokens: int, sms: int) -> dict:
    """The GluonKernel fields the runtime sets for this config at ``tokens`` tokens on ``sms`` SMs."""
    from sparsemla.runtime.triton_backend import gluon_fields
    units = tokens * -(-spec.num_heads // cfg.block_h) * cfg.num_splits
    return gluon_fields(spec, cfg, units, sms) if cfg.gluon else {}


def runtime_launch(spec: KernelSpec, cfg: Config, tokens: int, sms: int) -> dict:
    """The launch constexprs the runtime compiles this config with (pdl, fused; only those that are on)."""
    from sparsemla.runtime.triton_backend import launch_constexprs
    return {k: v for k, v in launch_constexprs(spec, cfg, tokens, sms).items() if v} if cfg.gluon else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("--jobs", type=int, default=2, help="compile processes")
    ap.add_argument("--sms", type=int, default=132, help="the table's GPU's SMs (the H200's 132), for the runtime's "
                    "choice of the persistent kernel")
    args = ap.parse_args()
    import triton

    table = json.load(open(args.table))
    arch = KernelSpec.from_key(next(iter(table["entries"]))).arch
    entries = [(key, int(b), e) for key, buckets in table["entries"].items() for b, e in buckets.items()]
    variants = {(key, b): {**runtime_variant(KernelSpec.from_key(key), Config(**e["config"]), b, args.sms),
                           **runtime_launch(KernelSpec.from_key(key), Config(**e["config"]), b, args.sms)}
                for key, b, e in entries}
    jobs = sorted({(key, json.dumps(e["config"], sort_keys=True), json.dumps(variants[key, b], sort_keys=True))
                   for key, b, e in entries})
    with ProcessPoolExecutor(args.jobs) as pool:
        done = dict(zip(jobs, pool.map(resources, [(k, json.loads(c), arch, json.loads(v)) for k, c, v in jobs])))
    rows, count = [], dict(hgmma=0, qgmma=0, hmma=0, other=0, spilling=0)
    for key, b, e in entries:
        spec = KernelSpec.from_key(key)
        variant = variants[key, b]
        r = done[(key, json.dumps(e["config"], sort_keys=True), json.dumps(variant, sort_keys=True))]
        count["qgmma" if r.get("QGMMA", 0) > r.get("HGMMA", 0) else "hgmma" if r.get("HGMMA") else
              "hmma" if r.get("HMMA") else "other"] += 1
        count["spilling"] += r.get("spills", 0) > 0
        cells = ([r["error"]] + [""] * 8 if "error" in r else
                 [f"{r['shared'] / 1024:.0f}", str(r["regs"]), str(r["spills"]), str(r["wgmma"]),
                  *[str(r[o]) for o in OPCODES]])
        rows.append(((label(spec), spec.num_heads, b),
                     f"| {label(spec)} | {b} | {spec.num_heads} | {config_label(e['config'])} | "
                     f"{' '.join(sorted(variant)) or '-'} | {e['backend']} | "
                     + " | ".join(cells) + " |"))
    rows.sort()
    print(f"# What the compiler made of the configs in {args.table}\n\n"
          f"{len(rows)} entries ({len(jobs)} distinct configs), compiled for {arch} with Triton "
          f"{triton.__version__} (the table: Triton {table['provenance'].get('triton')}, template "
          f"{table['provenance'].get('template_hash')}); `benchmarks/compile_report.py`. shared: KB per "
          f"block; regs and spills (bytes) from `ptxas -v`; wgmma: `wgmma.mma_async` in the PTX; the "
          f"rest are SASS opcodes: HGMMA / QGMMA (warpgroup MMA on 16- / 8-bit operands), HMMA (per-warp MMA), "
          f"LDGSTS (cp.async), STL / "
          f"LDL (spill stores and loads). variant: the Gluon kernel's variant the runtime runs for the entry's "
          f"bucket on {args.sms} SMs (persistent, staged_out: runtime/triton_backend.gluon_fields; pdl, fused: the "
          f"launch's constexprs, runtime/triton_backend.launch_constexprs). backend: what the table "
          f"dispatches to (a flashinfer entry keeps its Triton config for other callers).\n\n"
          f"Entries whose kernel runs on HGMMA: {count['hgmma']}; on QGMMA for the most part: {count['qgmma']} "
          f"(GluonKernel.raw: fp8_e4m3's on QGMMA alone, fp8_ds_mla's beside 4 HGMMA for the rope's S^T); on HMMA: "
          f"{count['hmma']} (the Triton "
          f"kernel with block_h < 64: wgmma takes 64 rows per warp group, and heads are not padded to 64; "
          f"the narrow Gluon kernel puts them in wgmma's N); neither or not built: "
          f"{count['other']}. Entries that spill: {count['spilling']}.\n")
    print("| format | T | H | config | variant | backend | shared KB | regs | spills B | wgmma | "
          + " | ".join(OPCODES) + " |")
    print("|" + "---|" * (10 + len(OPCODES)))
    for _, line in rows:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
