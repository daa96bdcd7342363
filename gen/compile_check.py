"""Compile a generated kernel for a GPU target without a GPU, and report its resources.

``triton.compile`` with a ``GPUTarget`` runs the whole pipeline down to a cubin on any
machine; ``ptxas -v`` on the PTX then gives registers and spills. The tuner uses this to
reject configs before any GPU time, and the CPU tests use it to prove that every shipped
variant builds for sm_90a, sm_120 and sm_121 within its shared-memory limit.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass

from .render import COMPILE_OPTIONS, interpreting, load_compilable_module
from .spec import ARCHS, Config, KernelSpec

_PTR = {"q": "q", "out": "q", "kv_elem": "q", "x_kv_elem": "q", "kv_fp8": "u8", "x_kv_fp8": "u8",
        "kv_bf16": "bf16", "x_kv_bf16": "bf16", "kv_f32": "fp32", "x_kv_f32": "fp32",
        "idx": "i32", "x_idx": "i32", "topk_len": "i32", "x_topk_len": "i32", "sink": "fp32",
        "lse": "fp32", "o_part": "fp32", "lse_part": "fp32", "x_o_part": "fp32", "x_lse_part": "fp32", "prof": "i64"}
_FLOATS = {"kv_scale", "x_kv_scale", "sm_scale"}
_UNIT_STRIDES = {"stride_qd", "stride_od", "stride_ik", "x_stride_ik"}
_DT = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}


@dataclass(frozen=True)
class CompileReport:
    spec_key: str
    config: Config
    arch: str
    ok: bool
    shared_bytes: int = 0
    registers: int = 0
    spill_bytes: int = 0
    error: str = ""

    @property
    def fits(self) -> bool:
        return self.ok and self.shared_bytes <= ARCHS[self.arch].smem_bytes

    def line(self) -> str:
        if not self.ok:
            return f"{self.arch} {self.spec_key} {self.config}: FAILED {self.error.splitlines()[0] if self.error else ''}"
        return (f"{self.arch} {self.spec_key} {self.config}: smem {self.shared_bytes} B "
                f"(limit {ARCHS[self.arch].smem_bytes}), {self.registers} regs, {self.spill_bytes} B spilled")


def compile_jit(fn, arg_types: dict, constexprs: dict, arch: str, num_warps: int):
    """Triton JIT function ``fn`` compiled for ``arch`` without a GPU (the paging kernels): the
    constexprs given, the arguments named in ``arg_types`` of those types (pointers 16-byte aligned, as the launches'
    tensors are), every other argument (strides, counts) i32. Raises what triton.compile raises."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig, attrs = {}, {}
    for i, arg in enumerate(fn.arg_names):
        if arg in constexprs:
            sig[arg] = "constexpr"
        elif arg in arg_types:
            sig[arg] = arg_types[arg]
            if arg_types[arg].startswith("*"):
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[arg] = "i32"
    return triton.compile(ASTSource(fn, sig, constexprs, attrs), target=GPUTarget("cuda", ARCHS[arch].cc, 32),
                          options={**COMPILE_OPTIONS, "num_warps": num_warps})


def _signature(fn, spec: KernelSpec, constexprs: dict, ones=()):
    """The launch's signature: ``ones`` are integer arguments that are 1 (a real launch specializes them to the
    constant, which can change the code: session 43's raw kernel spilled with num_splits 1 and not otherwise)."""
    sig, attrs = {}, {}
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            sig[name] = "constexpr"
        elif name in _UNIT_STRIDES or name in ones:
            sig[name] = "constexpr"
            constexprs[name] = 1
        elif name in _PTR:
            dt = _PTR[name]
            sig[name] = "*" + (_DT[spec.q_dtype] if dt == "q" else dt)
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif name in _FLOATS:
            sig[name] = "fp32"
        else:  # strides, counts
            sig[name] = "i32"
            if "stride" in name:  # real launches specialize ints divisible by 16 (576, 656, ...)
                attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, attrs


def launch_ones(arg_names, spec: KernelSpec, config: Config) -> set[str]:
    """The integer arguments a launch of ``config`` passes as 1 (and Triton specializes to the constant): num_splits
    with one split and no extra cache, except in a tail-split kernel (one with whole_units), which takes the tail's
    split count."""
    if config.num_splits == 1 and not spec.extra_topk and "whole_units" not in arg_names and "num_splits" in arg_names:
        return {"num_splits"}
    return set()


def _ptxas_resources(ptx: str, arch_name: str) -> tuple[int, int]:
    from triton.backends.nvidia.compiler import get_ptxas
    try:
        ptxas = get_ptxas().path
    except TypeError:  # older signature
        ptxas = get_ptxas(ARCHS[arch_name].cc).path
    target = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)  # e.g. sm_90a, sm_120a
    gpu = target.group(1) if target else f"sm_{ARCHS[arch_name].cc}"
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        res = subprocess.run([ptxas, "-v", f"--gpu-name={gpu}", src, "-o", os.path.join(d, "k.o")],
                             capture_output=True, text=True)
    text = res.stdout + res.stderr
    regs = re.search(r"Used (\d+) registers", text)
    spills = re.findall(r"(\d+) bytes spill stores", text)
    return (int(regs.group(1)) if regs else -1, sum(int(s) for s in spills))


def compile_many(jobs, kernel: str = "sparse_mla_fwd") -> list[CompileReport]:
    """``compile_for_arch`` for each (spec, config, arch). In a process that runs Triton's
    interpreter, tl.* helpers were bound to it at import, so the compiles run in one child
    process with the interpreter off."""
    jobs = list(jobs)
    if not interpreting():
        return [compile_for_arch(s, c, a, kernel) for s, c, a in jobs]
    payload = json.dumps([dict(spec=s.key, config=c.to_dict(), arch=a, kernel=kernel) for s, c, a in jobs])
    env = dict(os.environ, TRITON_INTERPRET="0")
    res = subprocess.run([sys.executable, "-m", "sparsemla.gen.compile_check"], input=payload, env=env,
                         capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"compile-check child process failed: {res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return [CompileReport(**{**r, "config": Config(**r["config"])}) for r in out]


def compile_kernel(spec: KernelSpec, config: Config, arch: str, kernel: str = "sparse_mla_fwd", pdl: bool = False,
                   fused: int = 0, has_topk_len: bool = True, **variant):
    """Triton's compiled kernel (``.asm`` holds ttgir, ptx, cubin; ``.metadata.shared``) of
    ``kernel`` of ``spec``'s module (its Gluon module for a gluon config, with ``variant``'s GluonKernel fields,
    e.g. staged_out=True, and the launch's ``pdl``, ``fused`` and ``has_topk_len``, see ``compile_module``) with
    ``config`` for ``arch``; raises what the compiler raises. Not under the interpreter (see ``compile_many``)."""
    from .gluon import GluonKernel
    config.check(spec)
    unit = GluonKernel.for_config(spec, config, **variant) if config.gluon else spec
    return compile_module(load_compilable_module(unit), spec, config, arch, kernel, pdl=pdl, fused=fused,
                          has_topk_len=has_topk_len)


def compile_module(mod, spec: KernelSpec, config: Config, arch: str, kernel: str = "sparse_mla_fwd",
                   pdl: bool = False, fused: int = 0, has_topk_len: bool = True):
    """``compile_kernel`` for a module already imported (e.g. one rendered from another revision of
    its template): the Triton module's ``kernel``, or a Gluon module's kernel, whose tiling is fixed
    (``pdl``: as the runtime launches it when the combine is its programmatic dependent; ``fused``: the
    split count whose partials the kernel merges itself, the template's FUSED, 0 for the combine kernel;
    ``has_topk_len``: whether the call passes topk_length, the kernels' HAS_TOPK_LEN: without it a list's length is a
    constant, which changes the code)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if config.gluon:
        from triton.experimental.gluon._runtime import GluonASTSource
        from .gluon import extra_splits
        fn, source = mod.sparse_mla_fwd_gluon, GluonASTSource
        constexprs = {"SPLIT_K": config.num_splits > 1 or spec.extra_topk > 0, "HAS_TOPK_LEN": has_topk_len,
                      "HAS_X_TOPK_LEN": True, "PDL": pdl, "FUSED": fused, "X_SPLITS": extra_splits(spec, config)}
        constexprs = {k: v for k, v in constexprs.items() if k in fn.arg_names}  # (older templates: no PDL, FUSED)
        from .gluon import gluon_launch_options
        options = gluon_launch_options(mod)
    else:
        fn, source = getattr(mod, kernel), ASTSource
        constexprs = {"BLOCK_H": config.block_h, "BLOCK_N": config.block_n,
                      "INDEX_PREFETCH": config.index_prefetch, "P_EXCHANGE": config.p_exchange,
                      "L2_PREFETCH": config.l2_prefetch,
                      "SPLIT_K": config.num_splits > 1, "HAS_TOPK_LEN": True, "HAS_X_TOPK_LEN": True}
        constexprs = {k: v for k, v in constexprs.items() if k in fn.arg_names}
        options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    sig, attrs = _signature(fn, spec, constexprs, ones=launch_ones(fn.arg_names, spec, config))
    return triton.compile(source(fn, sig, constexprs, attrs), target=GPUTarget("cuda", ARCHS[arch].cc, 32),
                          options={**COMPILE_OPTIONS, **options})


def sass_text(cubin: bytes) -> str:
    """The cubin's SASS, as Triton's bundled cuobjdump prints it."""
    from triton import knobs

    cuobjdump = knobs.nvidia.cuobjdump.path
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True, check=True).stdout


def sass_opcode_counts(cubin: bytes, opcodes=("HGMMA", "HMMA", "LDGSTS", "STL", "LDL")) -> dict[str, int]:
    """How many instructions of each opcode the cubin's SASS holds: HGMMA is Hopper's warpgroup MMA, HMMA
    the older per-warp MMA, LDGSTS cp.async, STL/LDL spills."""
    sass = sass_text(cubin)
    ops = re.findall(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", sass, re.M)
    return {op: sum(1 for o in ops if o == op) for op in opcodes}


_SASS_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", re.M)


def sass_loops(sass: str, min_instructions: int = 30) -> list[tuple[int, int, dict[str, int]]]:
    """The innermost loops of a SASS listing (``sass_text``): each backward branch's body, as (first address,
    branch address, instruction count by opcode without modifiers), for bodies of at least ``min_instructions``
    that hold no other such body. What a warp issues per trip: e.g. a warp-specialized kernel's tile loop per
    partition (the one with HGMMA computes, the one with LDGSTS or F2FP loads or dequantizes)."""
    code = [(int(a, 16), text) for a, text in _SASS_LINE.findall(sass)]
    at = {a: i for i, (a, _) in enumerate(code)}
    bodies = []
    for i, (a, text) in enumerate(code):
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", text)
        target = int(m.group(1), 16) if m else None
        if target is not None and target <= a and target in at and i + 1 - at[target] >= min_instructions:
            bodies.append((at[target], i))
    inner = [(lo, hi) for lo, hi in bodies
             if not any(lo <= lo2 and hi2 <= hi and (lo2, hi2) != (lo, hi) for lo2, hi2 in bodies)]
    out = []
    for lo, hi in sorted(set(inner)):
        ops: dict[str, int] = {}
        for _, text in code[lo:hi + 1]:
            op = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]
            ops[op] = ops.get(op, 0) + 1
        out.append((code[lo][0], code[hi][0], dict(sorted(ops.items(), key=lambda kv: -kv[1]))))
    return out


def compile_for_arch(spec: KernelSpec, config: Config, arch: str | None = None,
                     kernel: str = "sparse_mla_fwd") -> CompileReport:
    """Compile ``kernel`` of ``spec``'s module with ``config`` for ``arch`` (default spec.arch)."""
    if interpreting():
        return compile_many([(spec, config, arch or spec.arch)], kernel)[0]
    arch = arch or spec.arch
    try:
        compiled = compile_kernel(spec, config, arch, kernel)
        shared = compiled.metadata.shared
        regs, spills = _ptxas_resources(compiled.asm["ptx"], arch)
        return CompileReport(spec.key, config, arch, True, shared, regs, spills)
    except Exception as e:  # a config that does not build is a result, not a crash
        return CompileReport(spec.key, config, arch, False, error=f"{type(e).__name__}: {e}")


if __name__ == "__main__":  # the child side of compile_many: JSON jobs on stdin, reports on stdout
    jobs = json.loads(sys.stdin.read())
    reports = [compile_for_arch(KernelSpec.from_key(j["spec"]), Config(**j["config"]), j["arch"], j["kernel"])
               for j in jobs]
    print(json.dumps([{**asdict(r), "config": r.config.to_dict()} for r in reports]))
