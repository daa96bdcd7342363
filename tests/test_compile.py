"""Every shipped attention variant compiles for its arch (sm_90a, sm_120, sm_121) on this CPU
machine, fits the arch's shared memory, and its spills are reported."""
import pytest

from sparsemla.gen.compile_check import compile_many
from sparsemla.gen.spec import ARCHS, KernelSpec, default_config

FORMATS = [("auto", 576, 1), ("auto", 512, 1), ("fp8_e4m3", 576, 1), ("fp8_ds_mla", 576, 64),
           ("model1", 512, 64)]


def _compiled_json(script: str, timeout: int = 900):
    """What ``script`` (compiling with Triton's GPU pipeline, so in a child process with the interpreter off)
    prints as JSON on its last line."""
    import json
    import os
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, TRITON_INTERPRET="0"),
                         capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _jobs():
    jobs = []
    for arch in ARCHS:
        for fmt, d_qk, page in FORMATS:
            for heads, tokens in ((128, 1), (16, 4096)):  # split-K decode and direct-write prefill
                spec = KernelSpec(kv_format=fmt, d_qk=d_qk, page_size=page, num_heads=heads, arch=arch)
                jobs.append((spec, default_config(spec, tokens), arch))
    return jobs


@pytest.fixture(scope="module")
def reports():
    return compile_many(_jobs())


def test_every_default_variant_compiles_and_fits(reports):
    assert len(reports) == len(ARCHS) * len(FORMATS) * 2
    for r in reports:
        assert r.ok, r.line()
        assert r.fits, r.line()
        assert r.shared_bytes > 0 and r.registers > 0


def test_features_compile_for_sm120():
    spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64, has_sink=True, return_lse=True,
                      extra_topk=128, extra_page_size=256, arch="sm120")
    (r,) = compile_many([(spec, default_config(spec, 1), "sm120")])
    assert r.ok and r.fits, r.line()


def test_a_config_over_the_shared_memory_limit_is_reported():
    from sparsemla.gen.spec import Config
    spec = KernelSpec(arch="sm121")
    (r,) = compile_many([(spec, Config(64, 128, 1, 8, 3), "sm121")])
    assert not r.fits, r.line()


def test_index_prefetch_compiles_and_deepens_the_kv_pipeline():
    # With the next tile's slot ids loaded a tile early, the pipeliner can keep num_stages - 1
    # gathered tiles in flight: 3 stages buffer more KV than 2 (without prefetch both buffer 2).
    from sparsemla.gen.spec import Config
    spec = KernelSpec(kv_format="auto", num_heads=64, arch="sm90")
    r2, r3, off3 = compile_many([(spec, Config(64, 32, 2, 8, 2, True), "sm90"),
                                 (spec, Config(64, 32, 2, 8, 3, True), "sm90"),
                                 (spec, Config(64, 32, 2, 8, 3, False), "sm90")])
    for r in (r2, r3, off3):
        assert r.ok and r.fits, r.line()
    tile = 32 * 576 * 2  # one gathered bf16 KV tile
    assert r3.shared_bytes >= r2.shared_bytes + tile, (r2.line(), r3.line())
    assert off3.shared_bytes < r3.shared_bytes, (off3.line(), r3.line())


def test_p_exchange_compiles_and_keeps_the_kv_pipeline():
    # P through the scratch needs a barrier per tile; it is inline asm because a gpu.barrier in
    # the loop turns Triton's software pipeliner off: with 2 stages the gathered KV tile is still
    # double-buffered in shared memory (compiled with every format's segment dots, split-K or not).
    from sparsemla.gen.spec import Config
    jobs = []
    for fmt, d_qk, page in (("auto", 576, 1), ("model1", 512, 64)):
        spec = KernelSpec(kv_format=fmt, d_qk=d_qk, page_size=page, num_heads=128, arch="sm90")
        jobs += [(spec, Config(64, 64, s, 8, st, p_exchange=True), "sm90") for s in (1, 4) for st in (1, 2)]
    reports = compile_many(jobs)
    for r in reports:
        assert r.ok and r.fits, r.line()
    auto_1, auto_2 = reports[0], reports[1]
    assert auto_2.shared_bytes >= auto_1.shared_bytes + 64 * 512 * 2, (auto_1.line(), auto_2.line())


_SASS_SCRIPT = """
import json
from sparsemla.gen.compile_check import compile_kernel, sass_opcode_counts
from sparsemla.gen.spec import Config, KernelSpec
out = {}
for arch, block_h, stages in (("sm90", 64, 2), ("sm90", 16, 2), ("sm120", 64, 1)):
    spec = KernelSpec(kv_format="auto", num_heads=64, arch=arch)
    compiled = compile_kernel(spec, Config(block_h, 64, 1, 4 if block_h == 16 else 8, stages), arch)
    out[f"{arch} h{block_h}"] = sass_opcode_counts(compiled.asm["cubin"])
    out["fp_fusion"] = compiled.metadata.enable_fp_fusion
print(json.dumps(out))
"""


def test_sass_shows_which_mma_each_variant_runs_on():
    # Hopper's warpgroup MMA (HGMMA) needs 64 rows per warp group: a 64-head block runs on it on
    # sm_90a; a 16-head block, and every block on sm_120 (no wgmma), run on the per-warp HMMA.
    import json
    import os
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-c", _SASS_SCRIPT], env=dict(os.environ, TRITON_INTERPRET="0"),
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    counts = json.loads(res.stdout.strip().splitlines()[-1])
    # FMA contraction is pinned (gen.render.COMPILE_OPTIONS): Triton 3.9 warns when it is left to its default,
    # which 3.10 turns off
    assert counts.pop("fp_fusion") is True and "FP_FUSION" not in res.stderr, res.stderr[-2000:]
    assert counts["sm90 h64"]["HGMMA"] > 0 and counts["sm90 h64"]["HMMA"] == 0, counts
    assert counts["sm90 h16"]["HGMMA"] == 0 and counts["sm90 h16"]["HMMA"] > 0, counts
    assert counts["sm120 h64"]["HGMMA"] == 0 and counts["sm120 h64"]["HMMA"] > 0, counts
    # With 2 stages the pipeliner gathers the next KV tile with cp.async while this one is used.
    assert counts["sm90 h64"]["LDGSTS"] > 0 and counts["sm90 h16"]["LDGSTS"] > 0, counts


_GLUON_SASS_SCRIPT = """
import json
from dataclasses import replace
from sparsemla.gen.compile_check import compile_kernel, sass_opcode_counts, sass_text
from sparsemla.gen.spec import Config, KernelSpec
out = {}
for fmt, kw in (("auto", {}), ("fp8_ds_mla", dict(page_size=64))):
    spec = KernelSpec(kv_format=fmt, num_heads=128, arch="sm90", has_sink=True, return_lse=True, **kw)
    for bh in (64, 16):
        compiled = compile_kernel(replace(spec, num_heads=16) if bh == 16 else spec,
                                  Config(bh, 64, 2, 8, 2, gluon=True), "sm90")
        out[f"{fmt} h{bh}"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                                   setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"))
# Q loaded where the rule (GluonKernel.q_by_compute) does not load it, so both placements build
from sparsemla.gen.compile_check import compile_module
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.render import load_compilable_module
for fmt, kw in (("auto", {}), ("fp8_ds_mla", dict(page_size=64))):
    spec = KernelSpec(kv_format=fmt, num_heads=16, arch="sm90", **kw)
    for bh in (64, 16):
        unit = GluonKernel(spec, bh, q_by_compute=not GluonKernel(spec, bh).q_by_compute)
        assert ("qc" in unit.key.split("-")) == unit.q_by_compute, unit.key
        compiled = compile_module(load_compilable_module(unit), spec, Config(bh, 64, 2, 8, 2, gluon=True), "sm90")
        out[f"{fmt} h{bh} other q"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                                      setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"))
# P for B's own P.V from registers beside Q's first 256 columns there (GluonKernel.p_regs, an option;
# q_regs=4 is the wide bf16 kernel's rule)
spec = KernelSpec(num_heads=128, arch="sm90")
unit = GluonKernel(spec, 64, p_regs=True)
assert unit.q_regs == 4, unit.key
compiled = compile_module(load_compilable_module(unit), spec, Config(64, 64, 1, 8, 2, gluon=True), "sm90")
out["auto h64 qr4 pr"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                           setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"))
# the persistent wide kernel (GluonKernel.persistent: one program per SM looping over units), with and without rope
for d_qk in (576, 512):
    spec = KernelSpec(d_qk=d_qk, num_heads=128, arch="sm90", has_sink=True, return_lse=True)
    unit = GluonKernel(spec, 64, persistent=True)
    assert "num_units" in load_compilable_module(unit).sparse_mla_fwd_gluon.arg_names, unit.key
    compiled = compile_module(load_compilable_module(unit), spec, Config(64, 64, 1, 8, 2, gluon=True), "sm90")
    out[f"auto h64 persistent {d_qk}"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                                              setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"),
                                              shared=compiled.metadata.shared)
# the wide kernel's output through a stage (GluonKernel.staged_out), bf16 and fp8_e4m3 (its scale)
for fmt, kw, ps in (("auto", {}, False), ("fp8_e4m3", dict(page_size=16), False), ("auto", {}, True)):
    spec = KernelSpec(kv_format=fmt, num_heads=128, arch="sm90", has_sink=True, return_lse=True, **kw)
    fmt += " persistent" if ps else ""
    for so in (False, True):
        compiled = compile_module(load_compilable_module(GluonKernel(spec, 64, persistent=ps, staged_out=so)), spec,
                                  Config(64, 64, 1, 8, 2, gluon=True), "sm90")
        stg = [line for line in sass_text(compiled.asm["cubin"]).splitlines() if " STG" in line]
        out[f"{fmt} h64 staged {so}"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                                             setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"), STG=len(stg),
                                             STG128=sum(".128" in line for line in stg), shared=compiled.metadata.shared)
# the persistent kernel with its last round's units split (GluonKernel.tail_split): staged whole units, partials
spec = KernelSpec(num_heads=128, arch="sm90", has_sink=True, return_lse=True)
unit = GluonKernel(spec, 64, persistent=True, staged_out=True, tail_split=True)
assert "whole_units" in load_compilable_module(unit).sparse_mla_fwd_gluon.arg_names, unit.key
compiled = compile_module(load_compilable_module(unit), spec, Config(64, 64, 1, 8, 2, gluon=True), "sm90")
stg = [line for line in sass_text(compiled.asm["cubin"]).splitlines() if " STG" in line]
out["auto persistent h64 tail"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                                       setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"), STG=len(stg),
                                       STG128=sum(".128" in line for line in stg), shared=compiled.metadata.shared)
# a program that waits for the stream's previous kernel (GluonKernel.pdl_wait: launched with launch_pdl)
from sparsemla.gen.gluon import gluon_launch_options
for pw in (False, True):
    spec = KernelSpec(num_heads=16, arch="sm90")
    mod = load_compilable_module(GluonKernel(spec, 16, pdl_wait=pw))
    compiled = compile_module(mod, spec, Config(16, 64, 4, 8, 2, gluon=True), "sm90")
    out[f"auto h16 pdl_wait {pw}"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                                          setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"),
                                          waits=compiled.asm["ptx"].count("griddepcontrol.wait"),
                                          launch_pdl=gluon_launch_options(mod).get("launch_pdl", False))
# bfloat16 partials (GluonKernel.parts_bf16): the narrow kernel's 32-bit words and the wide kernel's 64-bit pairs of
# them, not 16-bit stores, no staging
for fmt, H, bh in (("auto", 128, 16), ("fp8_e4m3", 128, 32), ("auto", 128, 64)):
    spec = KernelSpec(kv_format=fmt, num_heads=H, arch="sm90", has_sink=True, return_lse=True)
    for pb in (False, True):
        compiled = compile_module(load_compilable_module(GluonKernel(spec, bh, parts_bf16=pb)), spec,
                                  Config(bh, 64, 16, 8, 2, gluon=True), "sm90")
        stg = [line for line in sass_text(compiled.asm["cubin"]).splitlines() if " STG" in line]
        out[f"{fmt} h{bh} parts_bf16 {pb}"] = dict(
            sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")), STG=len(stg),
            STG16=sum(".U16" in line for line in stg), setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"),
            shared=compiled.metadata.shared)
# a profile build (clock stamps into a last, keyword argument; benchmarks/calls/gluon_timeline.py)
unit = GluonKernel(KernelSpec(num_heads=16, arch="sm90"), 16, profile=True)
compiled = compile_module(load_compilable_module(unit), unit.spec, Config(16, 64, 1, 8, 2, gluon=True), "sm90")
out["auto h16 profile"] = dict(sass_opcode_counts(compiled.asm["cubin"], ("HGMMA", "LDGSTS", "STL", "SYNCS")),
                               setmaxnreg=compiled.asm["ptx"].count("setmaxnreg"))
# the combine as a programmatic dependent (runtime/triton_backend._pdl): the Gluon kernel lets it launch
# (griddepcontrol.launch_dependents), the combine waits for the grid (griddepcontrol.wait); off, neither
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from sparsemla.gen.compile_check import _signature
pdl = {}
spec = KernelSpec(num_heads=64, arch="sm90")
for on in (False, True):
    compiled = compile_module(load_compilable_module(GluonKernel(spec, 16)), spec, Config(16, 64, 16, 8, 2, gluon=True),
                              "sm90", pdl=on)
    pdl[f"fwd {on}"] = compiled.asm["ptx"].count("griddepcontrol.launch_dependents")
    fn = load_compilable_module(spec).sparse_mla_combine
    consts = dict(NUM_SPLITS=16, SPLITS_P2=16, BLOCK_DV=512, PDL=on, PARTS_FIRST=on, TRIGGER=on, PARTS_BF16=False)
    sig, attrs = _signature(fn, spec, consts)
    compiled = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": 4})
    pdl[f"combine {on}"] = compiled.asm["ptx"].count("griddepcontrol.wait")
    pdl[f"combine trigger {on}"] = compiled.asm["ptx"].count("griddepcontrol.launch_dependents")
    # PARTS_FIRST (here with PDL): global loads in the SASS before the first max of the LSEs' math
    sass = sass_text(compiled.asm["cubin"])
    pdl[f"combine loads {on}"] = sass.split("FMNMX", 1)[0].count("LDG")
# the combine on bfloat16 partials (PARTS_BF16) with its warps (runtime/triton_backend.combine_warps): each thread
# sums every split of its columns without shared memory, and stores 4 output columns at a time
from sparsemla.runtime.triton_backend import combine_columns, combine_warps
for splits in (2, 16, 32):
    block_dv = combine_columns(splits, 512)
    consts = dict(NUM_SPLITS=splits, SPLITS_P2=splits, BLOCK_DV=block_dv, PDL=True, PARTS_FIRST=True, TRIGGER=False,
                  PARTS_BF16=True)
    sig, attrs = _signature(fn, spec, consts)
    compiled = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": combine_warps(block_dv, True)})
    pdl[f"combine bf16 {splits}"] = sass_opcode_counts(compiled.asm["cubin"], ("STS", "STL"))
    pdl[f"combine bf16 {splits}"]["STG64"] = sass_text(compiled.asm["cubin"]).count("STG.E.64")
# the split-K combine in the kernel (FUSED, the split count; runtime/triton_backend._fused): tickets and counts of
# partials written by atomics (release after a partition's stores, acquire before the last split reads them)
fused = {}
for fmt, H, bh, st, kw in (("auto", 128, 64, 2, {}), ("fp8_ds_mla", 64, 64, 2, dict(page_size=64)),
                           ("auto", 16, 16, 2, {}), ("fp8_e4m3", 16, 16, 1, dict(page_size=16))):
    spec = KernelSpec(kv_format=fmt, num_heads=H, arch="sm90", has_sink=True, return_lse=True, **kw)
    cfg = Config(bh, 64, 4, 8, st, gluon=True)
    for on in (0, 2):  # (the split count runtime/triton_backend._fused takes it for)
        compiled = compile_module(load_compilable_module(GluonKernel.for_config(spec, cfg)), spec, cfg, "sm90",
                                  fused=on)
        ptx = compiled.asm["ptx"]
        fused[f"{fmt} h{bh} st{st} {on}"] = dict(release=ptx.count(".release."), acquire=ptx.count(".acquire."),
                                                 STL=sass_opcode_counts(compiled.asm["cubin"], ("STL",))["STL"])
print(json.dumps(dict(kernels=out, pdl=pdl, fused=fused)))
"""


def test_the_gluon_kernel_compiles_fits_and_specializes_its_warps():
    # Config.gluon: the Gluon template (one warp group gathering by cp.async, or with an fp8 cache a
    # third dequantizing into shared memory, one accumulating most of the output, one computing S and
    # the softmax, both on wgmma; block_h 16/32: its narrow variant, one computing warp group with the
    # heads as wgmma's N) builds for sm_90a with this Triton in every format, split-K or not, paged or
    # not, without spills.
    from sparsemla.gen.spec import Config
    jobs = [(KernelSpec(kv_format=f, d_qk=d, num_heads=h, page_size=p, arch="sm90", has_sink=sink, return_lse=sink),
             Config(64, 64, s, 8, 2, gluon=True), "sm90")
            for f, d, h, p, sink, s in (("auto", 576, 128, 1, False, 1), ("auto", 576, 128, 1, True, 4),
                                        ("auto", 576, 64, 64, False, 2), ("auto", 512, 128, 1, False, 1),
                                        ("fp8_e4m3", 576, 128, 16, True, 4), ("fp8_ds_mla", 576, 64, 64, False, 1),
                                        ("model1", 512, 128, 64, True, 2))]
    # the narrow kernel (heads as wgmma's N): 16 and 32 heads per program, one or two loading groups
    jobs += [(KernelSpec(kv_format=f, d_qk=d, num_heads=h, page_size=p, arch="sm90", has_sink=sink, return_lse=sink),
              Config(bh, 64, s, w, 2, gluon=True), "sm90")
             for f, d, h, bh, w, p, sink, s in (("auto", 576, 16, 16, 8, 1, True, 2),
                                                ("auto", 512, 32, 32, 8, 64, False, 1),
                                                ("auto", 576, 32, 16, 8, 1, False, 1),
                                                ("fp8_e4m3", 576, 16, 16, 12, 16, True, 1),
                                                ("fp8_ds_mla", 576, 32, 32, 8, 64, False, 2),
                                                ("model1", 512, 16, 16, 12, 64, True, 4))]
    # 16 heads with one stage, 128 registers a thread (two programs per SM)
    jobs += [(KernelSpec(kv_format=f, d_qk=576, num_heads=16, page_size=p, arch="sm90", has_sink=True, return_lse=True),
              Config(16, 64, 2, 8, 1, gluon=True), "sm90") for f, p in (("auto", 1), ("fp8_e4m3", 16))]
    jobs += [(KernelSpec(kv_format="model1", d_qk=512, num_heads=16, page_size=64, arch="sm90"),
              Config(16, 64, 1, 8, 1, gluon=True), "sm90")]
    # with an extra cache of the same page size (SPARSEMLA_EXTRA_GLUON: its list's programs as more splits)
    jobs += [(KernelSpec(kv_format=f, d_qk=d, num_heads=h, page_size=p, arch="sm90", has_sink=True, return_lse=True,
                         extra_topk=128, extra_page_size=p), Config(bh, 64, s, 8, st, gluon=True), "sm90")
             for f, d, h, p, bh, s, st in (("model1", 512, 128, 64, 64, 1, 2), ("model1", 512, 16, 64, 16, 4, 1),
                                           ("auto", 576, 64, 1, 64, 2, 2), ("fp8_e4m3", 576, 32, 16, 32, 2, 2))]
    for r in compile_many(jobs):
        # (fp8: 0 B on Triton 3.6, the H200's; a few bytes in some variants on 3.9 and 20 B in a model1 wide
        # variant on 3.8.0, whose register allocations differ: the dequantizing warp group leaves the default
        # partition 160 registers)
        # (one stage at 128 registers a thread: 0 B on 3.6, the H200's; up to 136 B on 3.9)
        # (an extra cache's slot count and fp8 scale are chosen per program, no longer kernel parameters: the model1
        # wide kernel spills 4-28 B on 3.6 and 48 B on 3.8.0)
        limit = 160 if r.config.num_stages == 1 else 0 if "auto" in r.spec_key else 64 if "-x" in r.spec_key else 32
        assert r.ok and r.fits and r.spill_bytes <= limit, r.line()
    result = _compiled_json(_GLUON_SASS_SCRIPT)
    counts, pdl = result["kernels"], result["pdl"]
    # PDL: one launch_dependents at the Gluon kernel's start, a wait before the combine reads partials
    assert pdl["fwd True"] >= 1 and pdl["combine True"] >= 1, pdl
    assert pdl["fwd False"] == 0 and pdl["combine False"] == 0, pdl
    # the combine's TRIGGER (SPARSEMLA_COMBINE_TRIGGER): the stream's next kernel may start once its programs have
    assert pdl["combine trigger True"] == 1 and pdl["combine trigger False"] == 0, pdl
    # PARTS_FIRST: the 16 x 512 partials (16 loads a thread) issued with the LSEs' loads, before their math;
    # without it only the LSEs' loads come first, and the partials' wait for the LSEs to arrive
    assert pdl["combine loads True"] >= 16 + pdl["combine loads False"] and pdl["combine loads False"] <= 6, pdl
    for splits in (2, 16, 32):
        c = pdl[f"combine bf16 {splits}"]
        assert c["STS"] == 0 and c["STL"] == 0 and c["STG64"] == 2, (splits, c)
    # parts_bf16: the partials as packed 32-bit words (the narrow kernel: a thread's two rows of a column pair; the
    # wide one: two words a store), fewer stores than float32's, none of 16 bits; no staging buffer, no spills added
    for fmt in ("auto h16", "fp8_e4m3 h32", "auto h64"):
        plain, pb = counts[f"{fmt} parts_bf16 False"], counts[f"{fmt} parts_bf16 True"]
        assert pb["STG"] < plain["STG"] and pb["STG16"] == 0, (fmt, plain, pb)
        assert pb["shared"] == plain["shared"] and pb["STL"] <= plain["STL"], (fmt, plain, pb)
    # FUSED: one release per writing partition (the wide kernel's A and B, the narrow kernel's M) and an
    # acquire spin for each; none without. Shared memory holds the accumulator for the merge, so no spills
    # with a bf16 cache, and with fp8 at most a few spill stores more than without FUSED (Triton 3.9's builds
    # spill there already, most with one stage at 128 registers a thread; on Triton 3.6, the H200's, FUSED
    # adds 0-16 B).
    for name, c in result["fused"].items():
        on, wide = not name.endswith(" 0"), " h64 " in name
        assert (c["release"], c["acquire"] > 0) == (((2 if wide else 1), True) if on else (0, False)), (name, c)
        base = result["fused"][name[:-1] + "0"]["STL"]
        assert c["STL"] <= (0 if name.startswith("auto") else base + 16), (name, c, base)
    # wgmma, cp.async (Q, and the gathers with bf16 only: fp8 tiles go through registers), mbarriers (SYNCS) between
    # the partitions, register reallocation.
    for fmt, c in counts.items():
        assert c["HGMMA"] > 0 and c["SYNCS"] > 0 and c["setmaxnreg"] > 0, (fmt, c)
        # (the spill allowance above; the tail split's: Triton 3.9 stores two words once and reloads them once a
        # unit, after its tile loop; Triton 3.6, the H200's, spills nothing there)
        assert c["STL"] <= (2 if "tail" in fmt else 0 if fmt.startswith("auto") else 4), (fmt, c)
    # the persistent kernel copies Q and gathers tile 0 in the partitions too (the next unit's), so it holds more
    # cp.async than the one-unit kernel, and its shared memory fits one program per SM (227 KB)
    for d_qk in (576, 512):
        c = counts[f"auto h64 persistent {d_qk}"]
        assert c["LDGSTS"] > counts["auto h64"]["LDGSTS"] and c["shared"] <= 227 * 1024, (d_qk, c)
    # staged_out: A's 64 x 384 output as 24 16-byte stores a thread (B's 128 columns stay 32 4-byte stores), none
    # of 16 bytes without it; through a stage it is done with, so no more shared memory
    for fmt in ("auto", "fp8_e4m3", "auto persistent"):
        off, on = counts[f"{fmt} h64 staged False"], counts[f"{fmt} h64 staged True"]
        assert on["STG128"] == 24 and off["STG128"] == 0 and on["STG"] == off["STG"] - 96 + 24, (fmt, off, on)
        assert on["shared"] == off["shared"], (fmt, off, on)
    # tail_split: the whole units' output still through the stage (24 16-byte stores a thread of A), and the tail
    # splits' partials as the split-K kernel writes them (A's 96 and B's 32 float stores, B's LSE partial) beside B's
    # final 32; one program per SM still
    on, off = counts["auto persistent h64 tail"], counts["auto persistent h64 staged True"]
    assert on["STG128"] == 24 and on["STG"] >= off["STG"] + 96 + 32, (on, off)
    assert on["HGMMA"] == off["HGMMA"] and on["shared"] <= 227 * 1024, (on, off)
    # pdl_wait: one griddepcontrol.wait, and the module asks to be launched as a programmatic dependent; none without
    off, on = counts["auto h16 pdl_wait False"], counts["auto h16 pdl_wait True"]
    assert (off["waits"], off["launch_pdl"], on["waits"], on["launch_pdl"]) == (0, False, 1, True), (off, on)
    assert (on["HGMMA"], on["STL"]) == (off["HGMMA"], off["STL"]), (off, on)
    for bh in (64, 16):
        # Q by 16-byte cp.async in every kernel (one per thread per 1024 elements: the computing warp
        # group's 128 threads x 8); with a bf16 cache the gathers too
        q_copies = bh * 576 // 1024
        assert counts[f"fp8_ds_mla h{bh}"]["LDGSTS"] == q_copies and counts[f"auto h{bh}"]["LDGSTS"] > q_copies, counts


_PARTS_SCRIPT = """
import json
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from sparsemla.gen.compile_check import _ptxas_resources, _signature
from sparsemla.gen.render import COMPILE_OPTIONS, load_compilable_module
from sparsemla.gen.spec import ARCHS, KernelSpec
out = {}
for arch in ("sm90", "sm120"):
    spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64, num_heads=64, arch=arch, has_sink=True,
                      return_lse=True, extra_topk=128, extra_page_size=256)
    fn = load_compilable_module(spec).sparse_mla_combine_parts
    consts = dict(SPLITS=16, X_SPLITS=2, SPLITS_P2=32, BLOCK_DV=256)
    sig, attrs = _signature(fn, spec, consts)
    compiled = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", ARCHS[arch].cc, 32),
                              options={**COMPILE_OPTIONS, "num_warps": 4})
    out[arch] = _ptxas_resources(compiled.asm["ptx"], arch)
print(json.dumps(out))
"""


def test_the_two_launch_merge_compiles():
    # runtime/triton_backend.PartsLaunch's merge of the main and the extra cache's partials, for the GPUs
    # (the CPU tests run it in the interpreter, tests/test_attention.py)
    for arch, (regs, spills) in _compiled_json(_PARTS_SCRIPT, timeout=600).items():
        assert regs > 0 and spills == 0, (arch, regs, spills)


def test_sass_loops_reports_innermost_loop_bodies():
    # A listing as cuobjdump prints it: an outer loop (0x0010-0x0140) around an inner one (0x0020-0x0120), a short
    # loop below the size limit, and a forward branch. Only the inner body is reported, its opcodes counted without
    # modifiers or predicates.
    from sparsemla.gen.compile_check import sass_loops

    def line(addr, text):
        return f"        /*{addr:04x}*/                   {text} ;                /* 0x000fe20000000f00 */"
    body = [line(0x0000, "MOV R1, c[0x0][0x28]"), line(0x0010, "IMAD R2, R3, R4, R5")]
    body += [line(0x0020 + 16 * i, "@P0 F2FP.BF16.F32.PACK_AB R6, R7, R8" if i % 2 else "HADD2.F32 R7, -RZ, R9.H0_H0")
             for i in range(16)]
    body += [line(0x0120, "@P1 BRA 0x20"), line(0x0130, "BRA 0x140"), line(0x0140, "@!P2 BRA 0x10"),
             line(0x0150, "NOP"), line(0x0160, "BRA 0x150"), line(0x0170, "EXIT")]
    loops = sass_loops("\n".join(body), min_instructions=10)
    assert loops == [(0x20, 0x120, {"HADD2": 8, "F2FP": 8, "BRA": 1})]


_RAW_SCRIPT = """
import json
from sparsemla.gen.compile_check import _ptxas_resources, compile_kernel, sass_opcode_counts
from sparsemla.gen.spec import Config, KernelSpec
out = {}
for fmt, d, h, page, sink in (("fp8_e4m3", 576, 16, 1, False), ("fp8_e4m3", 512, 16, 1, False),
                              ("fp8_e4m3", 576, 32, 16, True), ("fp8_e4m3", 512, 8, 64, True),
                              ("fp8_ds_mla", 576, 16, 64, False), ("fp8_ds_mla", 576, 24, 1, True)):
    spec = KernelSpec(kv_format=fmt, d_qk=d, num_heads=h, page_size=page, arch="sm90", has_sink=sink,
                      return_lse=sink)
    k = compile_kernel(spec, Config(16, 64, 1, 8, 2, gluon=True), "sm90", raw=True, pdl_wait=True,
                       has_topk_len=sink)
    counts = sass_opcode_counts(k.asm["cubin"], ("QGMMA", "HGMMA", "LDGSTS", "LDS", "PRMT"))
    out[spec.key] = dict(counts, shared=k.metadata.shared, spills=_ptxas_resources(k.asm["ptx"], "sm90")[1])
print(json.dumps(out))
"""


def test_the_raw_fp8_kernel_compiles_fits_and_computes_on_e4m3():
    # GluonKernel.raw (templates/sparse_mla_gluon_raw.py.jinja, session 42): with rope or without, paged or not, with a
    # sink, LSE and topk_length or not, it builds for sm_90a with two programs' shared memory an SM, both products on
    # e4m3 wgmmas (18 or 16 for S^T against Q's two halves, 32 for P.V from registers) and none on bf16, the rows by
    # cp.async (18 or 16 16-byte copies a thread a tile), V^T's operand by byte permutes; num_splits specialized to 1
    # as the launch does. fp8_ds_mla's (session 43): S^T's 16 e4m3 wgmmas (a group's 4 apart) and the rope's 4 on bf16,
    # P.V's 32; 21 copies a thread a tile (the scales 8 bytes, the rope 4 x 16). Spills: none on Triton 3.6 (the H200's)
    # nor 3.9; Triton 3.8 (torch 2.14's) spills 16 and 40 B in the paged variants with a sink (session 50), so other
    # versions get a bound that catches a blow-up (session 43's was 140 B).
    import triton
    for key, c in _compiled_json(_RAW_SCRIPT).items():
        rope = "qk576" in key
        if "fp8_ds_mla" in key:
            assert c["QGMMA"] == 16 + 32 and c["HGMMA"] == 4 and c["LDGSTS"] == 21, (key, c)
        else:
            assert c["QGMMA"] == (18 if rope else 16) + 32 and c["HGMMA"] == 0, (key, c)
            assert c["LDGSTS"] == (18 if rope else 16), (key, c)
        assert c["PRMT"] >= 128 and c["shared"] <= 227 * 1024 // 2, (key, c)
        assert c["spills"] <= (0 if triton.__version__.startswith(("3.6.", "3.9.")) else 64), (key, c)


def test_compile_checks_specialize_num_splits_as_launches_do():
    # Triton's launch specializes an integer argument of 1 to the constant, which can change the code (session 43: the
    # raw fp8_ds_mla kernel spilled 140 B with num_splits 1 and none with it a parameter), so the compile checks
    # compile num_splits as 1 where the launch passes 1: one split and no extra cache, but not a tail-split kernel's
    # (whole_units: it takes the tail's split count) nor a kernel without the argument
    from sparsemla.gen.compile_check import _signature, launch_ones
    from sparsemla.gen.spec import Config
    spec = KernelSpec(kv_format="fp8_ds_mla", num_heads=16, page_size=64, arch="sm90")
    gluon_args = ("q", "idx", "num_heads", "num_splits", "HAS_TOPK_LEN")
    assert launch_ones(gluon_args, spec, Config(16, 64, 1, 8, 1, gluon=True)) == {"num_splits"}
    assert launch_ones(gluon_args, spec, Config(16, 64, 4, 8, 1, gluon=True)) == set()
    assert launch_ones(gluon_args + ("whole_units",), spec, Config(64, 64, 1, 8, 2, gluon=True)) == set()
    assert launch_ones(("q", "idx"), spec, Config(16, 64, 1, 8, 1, gluon=True)) == set()
    extra = KernelSpec(kv_format="fp8_ds_mla", num_heads=16, page_size=64, arch="sm90", extra_topk=128,
                       extra_page_size=64)
    assert launch_ones(gluon_args, extra, Config(16, 64, 1, 8, 1, gluon=True)) == set()

    class Fn:
        arg_names = gluon_args

    constexprs = {"HAS_TOPK_LEN": True}
    sig, _ = _signature(Fn, spec, constexprs, ones={"num_splits"})
    assert sig["num_splits"] == "constexpr" and constexprs["num_splits"] == 1 and sig["num_heads"] == "i32"


_MAX_LOGITS_SCRIPT = """
import json, re
from sparsemla.gen.compile_check import compile_kernel, sass_text
from sparsemla.gen.spec import Config, KernelSpec
out = {}
ds = dict(kv_format="fp8_ds_mla", page_size=64)
for name, fmt, heads, cfg, kw in (("wide", {}, 128, Config(64, 64, 1, 8, 2, gluon=True),
                                   dict(persistent=True, staged_out=True, tail_split=True)),
                                  ("narrow", {}, 16, Config(16, 64, 4, 8, 1, gluon=True), {}),
                                  ("triton", {}, 64, Config(64, 32, 4, 8, 2), {}),
                                  ("raw", ds, 16, Config(16, 64, 1, 8, 2, gluon=True), dict(raw=True))):
    for ml in (False, True):
        spec = KernelSpec(num_heads=heads, arch="sm90", return_lse=True, max_logits=ml, **fmt)
        k = compile_kernel(spec, cfg, "sm90", **kw)
        sass = sass_text(k.asm["cubin"])
        out[f"{name} {ml}"] = dict(red=len(re.findall(r"REDG?\\.E\\.M(?:AX|IN)", sass)),
                                   atom=len(re.findall(r"ATOMG?\\.E\\.M(?:AX|IN)", sass)),
                                   stg=len(re.findall(r"\\bSTG\\.", sass)), shared=k.metadata.shared)
print(json.dumps(out))
"""


def test_max_logits_compiles_to_an_atomic_max_beside_the_lse():
    # KernelSpec.max_logits: each kernel raises its heads' max by atomic max (a signed max for floats >= 0, an
    # unsigned min below); shared memory unchanged, and nothing of it without max_logits. The Gluon kernels by red (no
    # value back: a program need not wait for it), the Triton kernel by atom (tl.atomic_max, which the interpreter
    # also runs). The raw fp8 kernel, whose one program sees a token's whole list for its heads, by a store.
    got = _compiled_json(_MAX_LOGITS_SCRIPT)
    for name in ("wide", "narrow", "triton", "raw"):
        off, on = got[f"{name} False"], got[f"{name} True"]
        assert off["red"] == off["atom"] == 0 and on["shared"] == off["shared"], got
    assert got["raw True"]["red"] == got["raw True"]["atom"] == 0, got
    assert got["raw True"]["stg"] > got["raw False"]["stg"], got
    assert got["wide True"]["red"] > 0 and got["narrow True"]["red"] > 0 and got["triton True"]["atom"] > 0, got
    assert got["wide True"]["atom"] == got["narrow True"]["atom"] == 0, got
