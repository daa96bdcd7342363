"""The sparse max-logits kernel (FlashMLA prefill's max_logits) in Triton's interpreter against an fp64 loop: score
dims 576 and 512, every slot outside the valid entries poisoned, non-contiguous inputs, topk_length (negative, past
topk), rows with nothing valid, head counts that leave a block part empty, several tilings; and its build for each
arch without a GPU (shared memory within the arch's limit)."""
import json
import math
import os
import subprocess
import sys

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

from sparsemla.gen.max_logits import MaxLogitsConfig, MaxLogitsSpec  # noqa: E402
from sparsemla.runtime.max_logits import sparse_max_logits, sparse_max_logits_reference  # noqa: E402


def _problem(gen, T, H, d, slots, topk, dtype, tlen):
    q = torch.randn(T, H, 2 * d, generator=gen).to(dtype)[:, :, ::2]  # non-contiguous rows
    kv = torch.randn(slots, d + 8, generator=gen).to(dtype)[:, :d]  # a row stride past d
    idx = torch.randint(-2, slots + 4, (topk, T), generator=gen, dtype=torch.int32).T  # column-major
    idx[1] = -1  # nothing valid
    pos = torch.arange(topk)
    valid = (idx >= 0) & (idx < slots)
    if tlen is not None:
        valid &= pos[None, :] < tlen.clamp(min=0)[:, None]
    keep = torch.zeros(slots, dtype=torch.bool)
    keep[idx[valid].long()] = True
    # What no valid entry names must never be read: a NaN there would not show (max drops NaN operands, in PTX and
    # in the interpreter), a row of 300s does (its score, 300 x the sum of q's head row, tops half the heads).
    kv[~keep] = 300.0
    return q, kv, idx, valid


def _fp64_max(q, kv, idx, valid, scale):
    out = torch.full(q.shape[:2], -math.inf, dtype=torch.float64)
    for t in range(q.shape[0]):
        sel = idx[t][valid[t]].long()
        if sel.numel():
            out[t] = (q[t].double() @ kv[sel].double().T * scale).amax(1)
    return out


@pytest.mark.parametrize("d,dtype,H,config", [
    (576, torch.float32, 5, None), (576, torch.bfloat16, 20, None), (512, torch.float16, 3, None),
    (576, torch.float32, 33, MaxLogitsConfig(16, 16, 4, 1)), (512, torch.float32, 64, MaxLogitsConfig(64, 64, 8, 3)),
    (576, torch.float16, 17, MaxLogitsConfig(32, 16, 4, 2))])
def test_against_fp64(d, dtype, H, config):
    gen = torch.Generator().manual_seed(torch.seed())
    T, slots, topk = 4, 90, 40
    tlen = torch.tensor([topk, topk, -3, 11], dtype=torch.int32) if H % 2 else None
    q, kv, idx, valid = _problem(gen, T, H, d, slots, topk, dtype, tlen)
    got = sparse_max_logits(q, kv, idx, 0.07, tlen, config=config)
    want = _fp64_max(q, kv, idx, valid, 0.07)
    assert got.dtype == torch.float32 and got.shape == (T, H)
    assert torch.equal(torch.isinf(got), torch.isinf(want)) and (got[want == -math.inf] == -math.inf).all()
    fin = torch.isfinite(want)
    assert fin[0].all() and not got.isnan().any()
    assert (got[fin].double() - want[fin]).abs().max() < 2e-5 * max(1.0, want[fin].abs().max())


def test_topk_length_past_topk_and_empty_lists():
    gen = torch.Generator().manual_seed(torch.seed())
    q, kv, idx, valid = _problem(gen, 3, 4, 512, 50, 24, torch.float32, None)
    past = torch.full((3,), 99, dtype=torch.int32)  # as topk
    assert torch.equal(sparse_max_logits(q, kv, idx, 0.1, past), sparse_max_logits(q, kv, idx, 0.1))
    none = sparse_max_logits(q, kv, idx[:, :0], 0.1)
    assert none.shape == (3, 4) and (none == -math.inf).all()
    assert sparse_max_logits(q[:0], kv, idx[:0], 0.1).shape == (0, 4)
    # a score dim the kernel has no segments for (not a multiple of 16): the PyTorch pass
    odd_q, odd_kv = q[..., :40], kv[:, :40]
    assert torch.equal(sparse_max_logits(odd_q, odd_kv, idx, 0.1), sparse_max_logits_reference(odd_q, odd_kv, idx, 0.1))


def test_reference_matches_the_kernel_where_the_kernel_cannot_run(monkeypatch):
    # Without the interpreter (a CPU tensor), the PyTorch pass runs: the same values.
    gen = torch.Generator().manual_seed(torch.seed())
    q, kv, idx, valid = _problem(gen, 3, 6, 576, 60, 32, torch.float32, None)
    got = sparse_max_logits(q, kv, idx, 0.05)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    ref = sparse_max_logits(q, kv, idx, 0.05)
    assert torch.equal(torch.isinf(got), torch.isinf(ref)) and (got - ref).nan_to_num(0).abs().max() < 1e-4
    assert torch.equal(ref, sparse_max_logits_reference(q, kv, idx, 0.05))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("SPARSEMLA_MAX_LOGITS_KERNEL", "0")  # the PyTorch pass wherever it runs
    assert torch.equal(sparse_max_logits(q, kv, idx, 0.05), ref)


def test_a_kernel_that_fails_to_build_is_reported_once_and_the_pytorch_pass_runs(monkeypatch, caplog):
    import sparsemla.runtime.max_logits as ml

    class Broken:
        def __getitem__(self, grid):
            raise RuntimeError("out of resources: shared memory")
    monkeypatch.setattr(ml, "load_module", lambda spec: type("M", (), {"sparse_max_logits_kernel": Broken()}))
    monkeypatch.setattr(ml, "_failed", set())
    gen = torch.Generator().manual_seed(torch.seed())
    q, kv, idx, valid = _problem(gen, 3, 4, 576, 40, 16, torch.float32, None)
    with caplog.at_level("WARNING", logger="sparsemla"):
        for _ in range(2):
            assert torch.equal(sparse_max_logits(q, kv, idx, 0.1), sparse_max_logits_reference(q, kv, idx, 0.1))
    warned = [r for r in caplog.records if "max_logits kernel max_logits-" in r.getMessage()]
    assert len(warned) == 1 and "out of resources" in warned[0].getMessage()
    with pytest.raises(RuntimeError, match="out of resources"):  # a config the caller chose: its error
        sparse_max_logits(q, kv, idx, 0.1, config=MaxLogitsConfig(16, 16, 4, 1))


def test_errors():
    q, kv, idx = torch.randn(2, 3, 576), torch.randn(10, 576), torch.zeros(2, 4, dtype=torch.int32)
    with pytest.raises(ValueError, match=r"^kv: shape \(10, 512\), expected \(\*, 576\)"):
        sparse_max_logits(q, kv[:, :512], idx, 0.1)
    with pytest.raises(TypeError, match="^kv: dtype torch.bfloat16, expected torch.float32"):
        sparse_max_logits(q, kv.bfloat16(), idx, 0.1)
    with pytest.raises(TypeError, match="^indices: dtype torch.int64"):
        sparse_max_logits(q, kv, idx.long(), 0.1)
    with pytest.raises(ValueError, match=r"^topk_length: shape \(3,\), expected \(2,\)"):
        sparse_max_logits(q, kv, idx, 0.1, torch.zeros(3, dtype=torch.int32))
    for bad in (0.0, -0.1, float("inf"), "0.1"):
        with pytest.raises(ValueError, match=f"^sm_scale={bad!r}: expected a positive finite float"):
            sparse_max_logits(q, kv, idx, bad)
    with pytest.raises(TypeError, match="^config: expected a MaxLogitsConfig or None, got dict"):
        sparse_max_logits(q, kv, idx, 0.1, config={"block_h": 16})
    with pytest.raises(ValueError, match=r"^MaxLogitsConfig.block_h=8: expected one of \(16, 32, 64\)"):
        MaxLogitsConfig(block_h=8)
    with pytest.raises(ValueError, match=r"^MaxLogitsSpec.d_qk=520: expected a multiple of 16"):
        MaxLogitsSpec(d_qk=520)
    assert MaxLogitsSpec(576).segments == [(0, 512), (512, 64)] and MaxLogitsSpec(48).segments == [(0, 32), (32, 16)]


_COMPILE_SCRIPT = """
import json
from sparsemla.gen.max_logits import MaxLogitsSpec, compile_max_logits
from sparsemla.gen.spec import ARCHS
res = {}
for arch in ("sm90", "sm120", "sm121"):
    for d, cdt in ((576, "bf16"), (512, "bf16"), (576, "fp16"), (576, "fp32")):
        for h in (16, 128):
            spec = MaxLogitsSpec(d, cdt, arch)
            k = compile_max_logits(spec, spec.default_config(h), q_dtype=cdt)
            res[f"{spec.key} h{h}"] = [k.metadata.shared, ARCHS[arch].smem_bytes, "wgmma" in k.asm["ptx"]]
print(json.dumps(res))
"""


def test_default_configs_compile_for_each_arch(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    built = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(built) == 24 and all(shared <= limit for shared, limit, _ in built.values()), built
    # sm90's 64-head programs run wgmma (float32 compute: FMA dots)
    assert all(wg == ("cfp32" not in key) for key, (_, _, wg) in built.items()
               if key.startswith("max_logits-sm90") and key.endswith("h128"))
