"""The persistent Gluon kernel's division of a call into units, run on the CPU.

The Gluon kernel runs only on the GPU, but its unit arithmetic (templates/sparse_mla_gluon.py.jinja: `_unit`, and with
GluonKernel.tail_split `_tail_row`) is scalar integer code. These tests take those functions from the rendered module's
source and run them with a stand-in for `gl` (scalar tensors, and pointers that only add offsets), then check that the
units cover every (token, head block) and top-k tile exactly once, and that the tail split's partials land where the
runtime's combine reads them (runtime/triton_backend.tail_split_for, TritonLaunch). The last test runs the runtime's
tail-split launch with the kernel emulated on those functions and the real combine kernel in Triton's interpreter.
"""
import ast
import math
import types

import pytest
import torch

from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.render import render_source
from sparsemla.gen.spec import KernelSpec
from sparsemla.runtime.triton_backend import tail_split_for


class _Ptr:
    """A pointer as the kernel adds to it: a base name and an element offset."""

    def __init__(self, name, off=0):
        self.name, self.off = name, int(off)

    def __add__(self, k):
        return _Ptr(self.name, self.off + int(k))


def _functions(unit: GluonKernel, lengths: torch.Tensor | None) -> types.SimpleNamespace:
    """The rendered module's _unit (and _tail_row) as Python functions over scalar tensors."""
    src = render_source(unit)
    tree = ast.parse(src)
    consts = {}
    for node in tree.body:  # the module's constexprs: NAME = gl.constexpr(value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == \
                "gl.constexpr" and isinstance(node.value.args[0], ast.Constant):
            consts[node.targets[0].id] = node.value.args[0].value
    gl = types.SimpleNamespace(
        cdiv=lambda a, b: (a + b - 1) // b, where=lambda c, a, b: torch.where(torch.as_tensor(c), a, b),
        minimum=lambda a, b: torch.minimum(torch.as_tensor(a), torch.as_tensor(b)),
        maximum=lambda a, b: torch.maximum(torch.as_tensor(a), torch.as_tensor(b)),
        load=lambda p: lengths[p.off], int64=torch.int64, constexpr=object)
    scope = dict(consts, gl=gl)
    fns = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("_unit", "_tail_row"):
            node.decorator_list = []
            for a in node.args.args:
                a.annotation = None
            exec(compile(ast.Module([node], []), "<rendered>", "exec"), scope)
            fns[node.name] = scope[node.name]
    return types.SimpleNamespace(**fns, consts=consts)


def _i(v) -> int:
    return int(torch.as_tensor(v))


@pytest.mark.parametrize("T,H,sms,topk,with_lengths", [
    (4096, 128, 132, 2048, False),  # the bf16 prefill row: 62 rounds, then 4 tokens in 16 splits
    (1060, 128, 132, 256, True),  # gpu_correctness.py's tail cases: 4 tokens in 4 splits, lengths cut some
    (400, 64, 132, 256, True),  # 1 head block
    (70, 192, 100, 2048, True),  # 3 head blocks: whole rounds end inside a token
])
def test_the_tail_split_units_cover_every_tile_once(T, H, sms, topk, with_lengths):
    spec = KernelSpec(num_heads=H, topk=topk, arch="sm90")
    unit = GluonKernel(spec, 64, persistent=True, staged_out=True, tail_split=True)
    gen = torch.Generator().manual_seed(T + H)
    lengths = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32) if with_lengths else None
    if lengths is not None:
        lengths[-1] = 0  # a tail token with no key: every split of it empty
    f = _functions(unit, lengths)
    hb_n, block_n, bh = -(-H // 64), f.consts["BLOCK_N"], f.consts["BLOCK_H"]
    t0, splits = tail_split_for(T, hb_n, -(-topk // block_n), sms)
    whole_units = t0 * hb_n
    num_units = whole_units + (T - t0) * hb_n * splits  # TritonLaunch's grid (its unit count)
    assert whole_units // sms * sms <= whole_units and (T - t0) * hb_n * splits <= sms
    covered = torch.zeros(T, hb_n, -(-topk // block_n), dtype=torch.int32)
    parts = set()
    for u in range(num_units):
        t, heads0, split, lo, hi, n_tiles, row = f._unit(torch.tensor(u), _Ptr("idx"), 4096, _Ptr("len"), H, splits,
                                                         whole_units, with_lengths)
        t, heads0, split, lo, hi, n_tiles = map(_i, (t, heads0, split, lo, hi, n_tiles))
        tail, t_part = f._tail_row(torch.tensor(u), torch.tensor(t), H, whole_units)
        want_hi = topk if lengths is None else min(topk, int(lengths[t]))
        assert row.name == "idx" and row.off == t * 4096 and heads0 % bh == 0 and heads0 < H
        assert bool(tail) == (t >= t0) == (u >= whole_units), (u, t)
        if not tail:
            assert (split, lo, hi) == (0, 0, want_hi), (u, t, split, lo, hi)
        else:
            assert 0 <= split < splits and lo % block_n == 0 and hi <= want_hi, (u, t, split, lo, hi)
            # the combine's row: (t - t0) * H + head, split `split` of `splits`
            assert _i(t_part) == t - t0
            parts.add((t - t0, heads0, split))
        assert n_tiles == max(0, -(-(hi - lo) // block_n))
        covered[t, heads0 // bh, lo // block_n:lo // block_n + n_tiles] += 1
    for t in range(T):  # each tile of a token's list by exactly one unit, none past it
        n = -(-(topk if lengths is None else int(lengths[t])) // block_n)
        assert (covered[t, :, :n] == 1).all() and (covered[t, :, n:] == 0).all(), t
    assert len(parts) == (T - t0) * hb_n * splits  # every partial the combine reads is written (empty ones too)


def test_without_a_tail_split_the_units_are_the_grids_programs():
    # the persistent kernel as shipped: unit u is the non-persistent kernel's program u (token-major, then head block)
    spec = KernelSpec(num_heads=128, arch="sm90")
    f = _functions(GluonKernel(spec, 64, persistent=True, staged_out=True), None)
    assert not hasattr(f, "_tail_row")
    for u in range(0, 8192, 97):
        t, heads0, split, lo, hi, n_tiles, row = f._unit(torch.tensor(u), _Ptr("idx"), 7, _Ptr("len"), 128, 1, False)
        assert (_i(t), _i(heads0), _i(split), _i(lo), _i(hi), _i(n_tiles), row.off) == (u // 2, u % 2 * 64, 0, 0, 2048,
                                                                                          32, u // 2 * 7)


class _EmulatedGluon:
    """Stands in for the persistent tail-split kernel's JIT function on the CPU: a launch (``fn[grid](*args, **kw)``)
    takes the runtime's arguments by the real kernel's names and runs its units as the kernel's programs would, each
    unit from the rendered _unit: a whole unit writes its rows of ``out`` from ``final`` (the reference), a tail
    split its partials as the kernel's _write_cols does (the split's normalized output, its base-2 LSE) for the
    combine kernel. Every launch is recorded."""

    def __init__(self, names, f, q64, kv64, final):
        self.names, self.f, self.q64, self.kv64, self.final = names, f, q64, kv64, final
        self.launches = []

    def __getitem__(self, grid):
        return lambda *args, **kw: self._run(grid, dict(zip(self.names, args)) | kw)

    def _run(self, grid, a):
        self.launches.append((grid, a))
        H, S, idx, lengths = a["num_heads"], a["num_splits"], a["idx"], a["topk_len"]
        f = _functions(self.f, lengths if a["HAS_TOPK_LEN"] else None)
        for pid in range(grid[0]):
            for u in range(pid, a["num_units"], grid[0]):
                t, heads0, split, lo, hi, n_tiles, _ = f._unit(torch.tensor(u), _Ptr("idx"), 0, _Ptr("len"), H, S,
                                                               a["whole_units"], a["HAS_TOPK_LEN"])
                t, heads0, split, lo, hi = map(_i, (t, heads0, split, lo, hi))
                tail, t_part = f._tail_row(torch.tensor(u), torch.tensor(t), H, a["whole_units"])
                heads = range(heads0, min(heads0 + 64, H))
                if not tail:
                    a["out"][t, heads0:heads0 + 64] = self.final[0][t, heads0:heads0 + 64].to(a["out"].dtype)
                    a["lse"][t, heads0:heads0 + 64] = self.final[1][t, heads0:heads0 + 64].float()
                    continue
                slots = idx[t, lo:hi].long()
                slots = slots[(slots >= 0) & (slots < a["num_slots"])]
                for h in heads:
                    part = (_i(t_part) * H + h) * S + split
                    s2 = (self.kv64[slots] @ self.q64[t, h]) * a["sm_scale"] / math.log(2)
                    if len(slots):
                        m = s2.max()
                        p = torch.exp2(s2 - m)
                        a["o_part"][part * 512:(part + 1) * 512] = (p @ self.kv64[slots, :512] / p.sum()).float()
                        a["lse_part"][part] = float(m + torch.log2(p.sum()))
                    else:
                        a["o_part"][part * 512:(part + 1) * 512] = 0.0
                        a["lse_part"][part] = -math.inf


def test_the_runtime_merges_the_tail_splits_partials_into_the_last_tokens_rows(monkeypatch):
    # runtime/triton_backend.TritonLaunch with the tail split, on the CPU: the Gluon kernel emulated (above) over the
    # arguments the runtime passes, the real combine kernel (interpreter) merging the partials into out[t0:], against
    # the float64 reference: the unit count and whole units passed, the workspace's size and the combine's rows.
    from sparsemla.runtime import triton_backend as tb
    from sparsemla.runtime.kvcache import describe_cache
    from helpers import reference64, rel_err
    from sparsemla.gen.render import load_compilable_module
    from sparsemla.gen.spec import Config
    T, H, topk, slots, sms = 21, 128, 256, 512, 8  # 42 units: 5 rounds of 8, then 1 token in 4 splits of a tile
    spec = KernelSpec(num_heads=H, topk=topk, arch="sm90", return_lse=True)
    config = Config(64, 64, 1, 8, 2, gluon=True)
    gen = torch.Generator().manual_seed(30)
    q = torch.randn(T, H, 576, generator=gen).half()
    kv = torch.randn(slots, 576, generator=gen).half()
    idx = torch.randint(-1, slots, (T, topk), generator=gen, dtype=torch.int32)
    lengths = torch.randint(0, topk + 1, (T,), generator=gen, dtype=torch.int32)
    lengths[-1] = 100  # the tail token: 2 tiles over 4 splits, two of them empty
    ref, rlse = reference64(q.double(), kv.double(), idx, 576 ** -0.5, 512, topk_length=lengths)
    unit = GluonKernel(spec, 64, persistent=True, staged_out=True, tail_split=True)
    names = load_compilable_module(unit).sparse_mla_fwd_gluon.arg_names
    emulated = _EmulatedGluon(names, unit, q.double(), kv.double(), (ref, rlse))
    real_load = tb.load_module
    monkeypatch.setattr(tb, "load_module", lambda k: types.SimpleNamespace(sparse_mla_fwd_gluon=emulated)
                        if isinstance(k, GluonKernel) else real_load(k))
    monkeypatch.setattr(tb, "gluon_launch_options", lambda gmod: {})
    monkeypatch.setattr(tb, "interpreting", lambda: False)  # (the combine still runs in Triton's interpreter)
    monkeypatch.setattr(tb, "_persistent", lambda spec, config, units, device: True)
    monkeypatch.setattr(tb, "_TAIL_SPLIT", True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda d: types.SimpleNamespace(multi_processor_count=sms))
    out = torch.full((T, H, 512), math.nan, dtype=torch.float16)
    lse = torch.full((T, H), math.nan)
    tb.run_triton(spec, config, q, describe_cache(kv, "auto", 576, 512, q_dtype=q.dtype), idx, 576 ** -0.5, out, lse,
                  topk_length=lengths)
    (grid, a), = emulated.launches
    assert (grid, a["num_units"], a["whole_units"], a["num_splits"]) == ((sms,), 40 + 4 * 2, 40, 4)
    assert a["o_part"].numel() == 1 * H * 4 * 512 and a["lse_part"].numel() == 1 * H * 4
    assert rel_err(out.float(), ref) < 2e-3, rel_err(out.float(), ref)  # the tail token's rows merged too
    fin = torch.isfinite(rlse)
    assert torch.equal(torch.isfinite(lse), fin) and (lse[fin].double() - rlse[fin]).abs().max() < 1e-3
