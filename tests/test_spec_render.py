"""The spec (validation, canonical key), rendering and its on-disk cache, and the KV helpers."""
import os

import pytest
import torch

import sparsemla
from sparsemla.cli import main as cli_main
from sparsemla.gen import render
from sparsemla.gen.spec import ARCHS, Config, KernelSpec, default_config


@pytest.mark.parametrize("kw,field", [
    (dict(arch="sm80"), "arch"), (dict(kv_format="int4"), "kv_format"), (dict(num_heads=0), "num_heads"),
    (dict(q_dtype="fp8"), "q_dtype"), (dict(kv_format="model1", d_qk=576), "model1"),
    (dict(kv_format="fp8_ds_mla", d_qk=512), "fp8_ds_mla"), (dict(page_size=0), "page_size"),
    (dict(d_qk=600), "d_qk"),
])
def test_invalid_specs_name_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        KernelSpec(**kw)


def test_key_round_trips_and_names_the_module():
    specs = [KernelSpec(), KernelSpec(kv_format="model1", d_qk=512, page_size=256, has_sink=True, extra_topk=128,
                                      extra_page_size=64, return_lse=True, arch="sm121", num_heads=16)]
    for s in specs:
        assert KernelSpec.from_key(s.key) == s
        assert s.module_name.isidentifier() and s.module_name.endswith(s.module_name.split("_gen_")[1])
    with pytest.raises(ValueError, match="spec key"):
        KernelSpec.from_key("sparse_mla-sm90-auto")


def test_configs_are_checked_against_the_arch():
    spec = KernelSpec(arch="sm120")
    with pytest.raises(ValueError, match="num_stages"):
        Config(num_stages=4).check(spec)
    with pytest.raises(ValueError, match="block_h"):
        Config(block_h=48).check(spec)
    for arch in ARCHS:
        for T in (1, 64, 4096):
            cfg = default_config(KernelSpec(arch=arch, num_heads=16), T)
            assert cfg.block_h == 16 and cfg.num_splits >= 1
    assert default_config(KernelSpec(), 1).num_splits > 1 and default_config(KernelSpec(), 4096).num_splits == 1


def test_render_is_cached_atomically_and_a_bad_cached_file_is_replaced(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SPARSEMLA_CACHE_DIR", str(tmp_path))
    spec = KernelSpec(num_heads=8, topk=32, kv_format="fp8_ds_mla", page_size=16, has_sink=True)
    path = render.module_path(spec)
    assert str(tmp_path) in str(path)
    src = render.render_source(spec)
    assert spec.key in src and "def sparse_mla_fwd" in src and "def sparse_mla_combine" in src
    render.load_module.cache_clear()
    mod = render.load_module(spec)
    assert mod.SPEC_KEY == spec.key and path.exists()
    assert not [p for p in path.parent.iterdir() if p.suffix == ".tmp"]
    path.write_text("this is not python (")  # a corrupt cache entry
    render.load_module.cache_clear()
    with caplog.at_level("WARNING", logger="sparsemla"):
        mod = render.load_module(spec)
    assert mod.SPEC_KEY == spec.key and "unusable" in caplog.text
    path.write_text(src + "\nEDITED = 1\n")  # imports and holds the spec, but is not the rendering
    render.load_module.cache_clear()
    caplog.clear()
    with caplog.at_level("WARNING", logger="sparsemla"):
        mod = render.load_module(spec)
    assert not hasattr(mod, "EDITED") and "not the rendering" in caplog.text and path.read_text() == src
    render.load_module.cache_clear()


def test_an_unwritable_cache_folder_falls_back_to_a_temporary_one(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("SPARSEMLA_CACHE_DIR", str(blocker / "cache"))  # under a file: cannot be made
    monkeypatch.setattr(render.tempfile, "tempdir", str(tmp_path / "tmp"))
    spec = KernelSpec(num_heads=8, topk=32)
    render.load_module.cache_clear()
    with caplog.at_level("WARNING", logger="sparsemla"):
        mod = render.load_module(spec)
    assert mod.SPEC_KEY == spec.key and "unusable" in caplog.text and "SPARSEMLA_CACHE_DIR" in caplog.text
    assert str(render.module_path(spec)).startswith(str(tmp_path / "tmp"))
    render.load_module.cache_clear()


def test_cli_render_writes_the_source(tmp_path, capsys):
    spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64)
    assert cli_main(["gen", "render", "--spec", spec.key, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.strip()
    assert os.path.exists(out) and spec.key in open(out).read()
    with pytest.raises(SystemExit) as e:  # a bad key: a usage error naming it, not a traceback
        cli_main(["gen", "render", "--spec", spec.key + "-bogus", "--out", str(tmp_path)])
    assert e.value.code == 2 and f"--spec: spec key '{spec.key}-bogus'" in capsys.readouterr().err
    # the other generated kernels' keys: the paging kernels'
    for key in ("page_split-sm90-model1-p256-to64", "convert_indices-sm120-p64-k2048"):
        assert cli_main(["gen", "render", "--spec", key, "--out", str(tmp_path)]) == 0
        assert f'SPEC_KEY = "{key}"' in open(capsys.readouterr().out.strip()).read()
    with pytest.raises(SystemExit) as e:
        cli_main(["gen", "render", "--spec", "page_split-sm90-model1-p256", "--out", str(tmp_path)])
    assert e.value.code == 2 and "--spec: paging spec key 'page_split-sm90-model1-p256'" in capsys.readouterr().err


@pytest.mark.parametrize("fmt,d,page", [("fp8_ds_mla", 576, 16), ("model1", 512, 64), ("model1", 512, 256),
                                        ("fp8_e4m3", 576, None), ("auto", 576, 8)])
def test_quantize_dequantize_round_trip(fmt, d, page):
    kv = torch.randn(300, d) * 3
    out = sparsemla.quantize_kv(kv, fmt, page_size=page)
    kw = {}
    if fmt == "fp8_e4m3":
        out, kw["kv_scale"] = out
    if fmt == "model1":
        kw["page_size"] = page
    back = sparsemla.dequantize_kv(out, fmt, **kw)[:300]
    err = ((back - kv).norm() / kv.norm()).item()
    assert err < (1e-6 if fmt == "auto" else 0.06), err  # e4m3 keeps 3 mantissa bits
    if fmt in ("fp8_ds_mla", "model1"):  # rope is stored in bf16, untouched by scales
        rope = slice(512, 576) if fmt == "fp8_ds_mla" else slice(448, 512)
        assert torch.allclose(back[:, rope], kv[:, rope].bfloat16().float())


def test_model1_bytes_follow_the_published_layout():
    """Decode one token by hand from the byte offsets in DEVELOPERS.md / the SGLang seed."""
    kv = torch.randn(130, 512)
    pages = sparsemla.quantize_kv(kv, "model1", page_size=64)
    assert pages.shape == (3, 37440)  # ceil(64 * 584 / 576) * 576
    s = 77
    p, o = divmod(s, 64)
    page = pages[p]
    nope = page[o * 576:o * 576 + 448].view(torch.float8_e4m3fn).float()
    rope = page[o * 576 + 448:o * 576 + 576].contiguous().view(torch.bfloat16).float()
    scales = torch.exp2(page[64 * 576 + o * 8:64 * 576 + o * 8 + 7].float() - 127)
    manual = torch.cat([(nope.view(7, 64) * scales[:, None]).flatten(), rope])
    assert torch.equal(manual, sparsemla.dequantize_kv(pages, "model1", page_size=64)[s])


def test_config_label_reads_configs_and_their_dicts():
    from sparsemla.gen.spec import Config, config_label
    assert config_label(Config(64, 64, 2, 8, 2)) == "h64 n64 s2 w8 st2"
    assert config_label(Config(64, 32, 2, 8, 3, True)) == "h64 n32 s2 w8 st3 pf"
    assert config_label(Config(16, 16, 1, 4, 1).to_dict()) == "h16 n16 s1 w4 st1"
    assert config_label({"block_h": 16}) == "h16 nNone sNone wNone stNone"  # a partial dict (a pruned trial)


def test_gluon_configs_are_checked_and_refused_where_the_kernel_cannot_run(monkeypatch):
    import torch

    import sparsemla
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.render import load_module
    from sparsemla.gen.spec import Config, KernelSpec, config_label
    g = Config(64, 64, 4, 8, 2, gluon=True)
    assert g.check(KernelSpec()) is g and config_label(g) == "h64 n64 s4 w8 st2 gl"
    assert Config.from_dict(g.to_dict()) == g
    for kw in (dict(kv_format="fp8_ds_mla", page_size=64), dict(kv_format="model1", d_qk=512, page_size=64),
               dict(kv_format="fp8_e4m3"), dict(d_qk=512), dict(num_heads=16),
               dict(extra_topk=64)):  # it runs these (an extra cache of the main one's page size: session 27)
        assert g.check(KernelSpec(**kw)) is g
    for kw, field in ((dict(compute_dtype="fp16"), "gluon"), (dict(arch="sm120"), "gluon"),
                      (dict(d_qk=320, d_v=256), "gluon"), (dict(extra_topk=64, extra_page_size=64), "gluon")):
        with pytest.raises(ValueError, match=f"Config.{field}=True"):
            g.check(KernelSpec(**kw))
    with pytest.raises(ValueError, match="Config.block_n=32 .*expected 64 with gluon=True"):
        Config(64, 32, 1, 8, 2, gluon=True).check(KernelSpec())
    # The narrow kernel: 16 or 32 heads per program, 8 warps, or 12 (two dequantizing groups) with fp8.
    for bh, w, fmt in ((16, 8, "auto"), (32, 8, "auto"), (16, 12, "fp8_e4m3"), (32, 12, "fp8_e4m3")):
        n = Config(bh, 64, 2, w, 2, gluon=True)
        assert n.check(KernelSpec(kv_format=fmt, num_heads=16)) is n
    fp8 = KernelSpec(kv_format="fp8_e4m3", d_qk=512)
    unit = GluonKernel.for_config(fp8, Config(16, 64, 2, 12, 2, gluon=True))
    # (Q loaded by the computing warp group: the narrow kernel and fp8 caches, session 17's rule)
    assert unit.key == fp8.key + "-gluon-h16-l2-qc" and unit.narrow and unit.loaders == 2
    # (two gathering groups with a bf16 cache: measured slower in session 37 and removed)
    with pytest.raises(ValueError, match="loaders=2: expected 1 with a bf16 cache"):
        GluonKernel(KernelSpec(), 16, 2)
    # (Q's first 256 columns in B's registers: the wide bf16 kernel, session 18's rule)
    assert GluonKernel(KernelSpec()).key == KernelSpec().key + "-gluon-qr4"
    assert GluonKernel(KernelSpec(), q_regs=0).key == KernelSpec().key + "-gluon"
    assert GluonKernel(KernelSpec(kv_format="fp8_e4m3")).key == KernelSpec(kv_format="fp8_e4m3").key + "-gluon-qc"
    # (Q loaded chunk by chunk, not by cp.async: 16-head programs with fp8_e4m3 and d_qk 576, session 18)
    assert GluonKernel(KernelSpec(kv_format="fp8_e4m3"), 16).key.endswith("-gluon-h16-l1-qc-ql")
    assert GluonKernel(KernelSpec(kv_format="fp8_e4m3", d_qk=512), 16).key.endswith("-gluon-h16-l1-qc")
    assert GluonKernel(KernelSpec(), 16, q_by_compute=False).key == KernelSpec().key + "-gluon-h16-l1"
    # 16 heads with one stage: two programs per SM, the register limit set at launch
    one = Config(16, 64, 1, 8, 1, gluon=True)
    assert one.check(KernelSpec(kv_format="fp8_e4m3", num_heads=16)) is one
    unit = GluonKernel.for_config(KernelSpec(), one)
    assert unit.key == KernelSpec().key + "-gluon-h16-l1-s1-qc" and unit.module_name.endswith("_gluon_h16_l1_s1_qc")
    from sparsemla.gen.gluon import gluon_launch_options
    assert gluon_launch_options(load_module(unit)) == dict(num_warps=4, maxnreg=128)
    assert gluon_launch_options(load_module(GluonKernel(KernelSpec(), 16))) == dict(num_warps=4)
    for cfg, field, expected in ((Config(32, 64, 1, 12, 2, gluon=True), "num_warps", "8 with a bf16 cache"),
                                 (Config(16, 64, 1, 4, 2, gluon=True), "num_warps", r"one of \(8, 12\)"),
                                 (Config(128, 64, 1, 8, 2, gluon=True), "block_h", r"one of \[16, 32, 64\]"),
                                 (Config(64, 64, 1, 12, 2), "num_warps", r".*\(or 12 with gluon=True\)"),
                                 (Config(32, 64, 1, 8, 1, gluon=True), "num_stages", "2 unless block_h=16"),
                                 (Config(16, 64, 1, 8, 3, gluon=True), "num_stages", r"one of \(2, 1\)"),
                                 (Config(64, 64, 1, 8, 1, gluon=True), "num_stages", "2 with gluon=True")):
        with pytest.raises(ValueError, match=f"Config.{field}=.*expected {expected}"):
            cfg.check(KernelSpec())
    with pytest.raises(ValueError, match="no Gluon kernel for"):
        GluonKernel(KernelSpec(compute_dtype="fp16"))
    assert GluonKernel(KernelSpec(), q_regs=4).key == KernelSpec().key + "-gluon-qr4"
    assert GluonKernel(KernelSpec(), q_regs=4, p_regs=True).key == KernelSpec().key + "-gluon-qr4-pr"
    # the persistent wide kernel: its own module, with the unit count as an argument; the wide bf16 kernel only
    ps = GluonKernel(KernelSpec(), persistent=True)
    assert ps.key == KernelSpec().key + "-gluon-qr4-ps"
    assert "num_units" in render.render_source(ps) and "num_units" not in render.render_source(GluonKernel(KernelSpec()))
    for bad in (dict(block_h=16), dict(spec=KernelSpec(kv_format="fp8_e4m3")), dict(profile=True),
                dict(q_by_compute=True)):
        with pytest.raises(ValueError, match="persistent"):
            GluonKernel(**{"spec": KernelSpec(), **bad}, persistent=True)
    # the wide kernel's output through a stage: its own module, persistent or not; not the narrow kernel
    assert GluonKernel(KernelSpec(), staged_out=True).key == KernelSpec().key + "-gluon-qr4-so"
    assert GluonKernel(KernelSpec(), persistent=True, staged_out=True).key == KernelSpec().key + "-gluon-qr4-ps-so"
    assert "_store_staged" in render.render_source(GluonKernel(KernelSpec(), staged_out=True))
    assert "_store_staged" not in render.render_source(GluonKernel(KernelSpec()))
    with pytest.raises(ValueError, match="staged_out"):
        GluonKernel(KernelSpec(), 16, staged_out=True)
    # A profile build (a diagnostic) takes its slots as a last, keyword argument
    prof = GluonKernel(KernelSpec(), 16, profile=True)
    assert prof.key.endswith("-prof")
    src = render.render_source(prof)
    assert "_stamp(prof, 15)" in src and "    prof,  # int64" in src and "_stamp" not in render.render_source(GluonKernel(KernelSpec(), 16))
    with pytest.raises(ValueError, match="p_regs=True: expected block_h 64"):
        GluonKernel(KernelSpec(), 16, p_regs=True)
    for kw, q_regs in ((dict(block_h=16), 4), (dict(), 3), (dict(spec=KernelSpec(kv_format="fp8_e4m3")), 4)):
        with pytest.raises(ValueError, match=f"q_regs={q_regs}: expected 0, or 4, 6 or 8 with block_h 64 and a bf16"):
            GluonKernel(**{"spec": KernelSpec(), **kw}, q_regs=q_regs)
    for bh, loaders, stages, expected in ((32, 1, 1, "block_h=16 and one loading warp group"),
                                          (16, 1, 3, "block_h 16, 32 or 64, loaders 1 or 2, stages 1 or 2"),
                                          (16, 2, 1, "block_h=16 and one loading warp group"),
                                          (64, 2, 2, "block_h 64 has one loading warp group")):
        with pytest.raises(ValueError, match=f"loaders={loaders}, stages={stages}: expected {expected}"):
            GluonKernel(KernelSpec(), bh, loaders, stages)
    # The module renders and imports on any machine (its spec key names it); it runs on an sm90 GPU
    # only, so under Triton's interpreter a gluon config is refused with a clear error.
    spec = KernelSpec(num_heads=64, page_size=16, has_sink=True)
    mod = load_module(GluonKernel(spec))
    assert mod.SPEC_KEY == spec.key + "-gluon-qr4" and mod.PAGE_SIZE.value == 16
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    q = torch.randn(2, 64, 576).to(torch.bfloat16)
    kv = torch.randn(64, 576).to(torch.bfloat16)
    idx = torch.zeros(2, 2048, dtype=torch.int32)
    with pytest.raises(ValueError, match="Config.gluon=True .*not under TRITON_INTERPRET"):
        sparsemla.sparse_mla(q, kv, idx, sm_scale=0.1, backend="triton", config=Config(64, 64, 1, 8, 2, gluon=True),
                             compute_dtype="bf16")


def test_interpreter_scalar_index_conversion_with_new_numpy():
    # Triton 3.6's interpreter converts a loop bound with int() on a 1-element array, which NumPy 2.3+ refuses;
    # gen.interpreter_compat squeezes it first, as Triton 3.9 does (every interpreted kernel's range() runs
    # through it where NumPy refuses; with Triton 3.6 and NumPy 2.4 the whole CPU suite passes with it)
    import types

    import numpy as np
    from triton.runtime import interpreter

    from sparsemla.gen import interpreter_compat
    from sparsemla.gen.render import load_module
    load_module(KernelSpec(arch="sm120", num_heads=16))  # (under the interpreter: installs the patch)
    try:
        int(np.zeros(1))
        refuses = False
    except TypeError:
        refuses = True
    assert interpreter_compat.patch() == refuses
    if refuses:
        assert interpreter._patch_lang_tensor.__module__ == interpreter_compat.__name__

        class Scope:
            def set_attr(self, obj, name, value):
                setattr(obj, name, value)

        class Tensor:  # (only what the conversion reads)
            pass

        interpreter._patch_lang_tensor(Tensor, Scope())
        t = Tensor()
        t.handle = types.SimpleNamespace(data=np.array([7], dtype=np.int32))
        assert range(0, t)[-1] == 6


def test_the_ready_fence_variant_drops_the_computing_groups_fence_for_fp8_stages():
    # GluonKernel.ready_fence=False (prepared in session 26): an fp8 stage is stored by group C, which fences its own
    # stores before it arrives on READY, so the computing group's fence after the wait is dropped; a bf16 stage
    # arrives by cp.async and keeps it (the field is refused there).
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.render import render_source
    for block_h in (16, 64):
        spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64, arch="sm90")
        shipped, variant = GluonKernel(spec, block_h), GluonKernel(spec, block_h, ready_fence=False)
        assert variant.key == shipped.key + "-nrf"
        a, b = render_source(shipped), render_source(variant)
        assert a.count("fence_async_shared()") == b.count("fence_async_shared()") + 1, block_h
    with pytest.raises(ValueError, match="ready_fence=False: expected an fp8 cache"):
        GluonKernel(KernelSpec(arch="sm90"), 16, ready_fence=False)


def test_model1s_scales_apply_to_the_bf16_values():
    # GluonKernel.bf16_scale (session 31; the rule: on for model1): group C multiplies the packed bf16 values by the
    # ue8m0 scale as a bf16 (a power of two: the same values) instead of the float32 ones; off, the float32 path;
    # refused where a scale would round.
    from sparsemla.gen.gluon import GluonKernel
    from sparsemla.gen.render import render_source
    spec = KernelSpec(kv_format="model1", d_qk=512, page_size=64, arch="sm90")
    for block_h in (16, 64):
        default, off = GluonKernel(spec, block_h), GluonKernel(spec, block_h, bf16_scale=False)
        assert default.bf16_scale and default.key == off.key + "-bs"
        a, b = render_source(off), render_source(default)
        assert a.count("<< 23).to(gl.float32, bitcast=True)") == 7 and "<< 7).to(gl.bfloat16" not in a
        assert b.count("<< 7).to(gl.bfloat16, bitcast=True)") == 7 and "<< 23)" not in b
    for kv_format, d_qk in (("fp8_ds_mla", 576), ("fp8_e4m3", 576), ("auto", 576)):
        spec = KernelSpec(kv_format=kv_format, d_qk=d_qk, page_size=64, arch="sm90")
        assert not GluonKernel(spec, 16).bf16_scale
        with pytest.raises(ValueError, match="bf16_scale=True: expected kv_format 'model1'"):
            GluonKernel(spec, 16, bf16_scale=True)


def test_bf16_scales_give_the_float32_paths_values():
    # The two conversions of bf16_scale's branches, in torch, over every e4m3 byte and every ue8m0 byte whose
    # products stay in bf16's normal range (ue8m0 bytes 1..254; 0 and 255 are 0 and inf/NaN in both): equal.
    v = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()
    v = v[~v.isnan()]
    for byte in range(1, 255):
        f32 = (v * torch.tensor([byte << 23], dtype=torch.int32).view(torch.float32)).to(torch.bfloat16)
        bf = v.to(torch.bfloat16) * torch.tensor([byte << 7], dtype=torch.int16).view(torch.bfloat16)
        tiny = f32.float().abs() < 2.0 ** -126  # below bf16's normal range (the GPU may flush either)
        assert torch.equal(f32[~tiny], bf[~tiny]), byte
