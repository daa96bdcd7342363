"""Issue 7 diagnostic (session 17; prepared, not yet run): where a Gluon kernel's time goes, read from a
profile build of the shipped entry (GluonKernel.profile: clock64 stamps at the phase boundaries of
every partition and sums of cycles spent waiting at and working between its barriers, 32 slots per
program; templates/sparse_mla_gluon.py.jinja's header lists them).

For each row (FORMAT:H:T, FORMAT one of the suite's formats): the shipped config's profile build is
warmed up on the tuner's rotating timing inputs, then one call on a set it has not seen for a while
(its rows out of L2) is read back. Printed per phase: median and 90th percentile over the programs, in
clock cycles of the program's SM, and the spread of the programs' starts and ends (global timer, ns).
The stamps cost a few cycles each; the outputs of the profile build are correct.

  python3 benchmarks/calls/gluon_timeline.py [--rows bf16:128:1,fp8:16:256,bf16:128:128] [--with q_async=False]
  (on the GPU after `pip install .`; rows as gluon_variant.py takes them, FORMAT:H:T[:CONFIG]; --with sets more
  GluonKernel fields, as gluon_variant.py's variants)
"""
import os
import sys

os.environ["SPARSEMLA_DIRECT_LAUNCH"] = "0"  # launch through the JIT, which takes the extra prof argument
os.environ["SPARSEMLA_PERSISTENT"] = "0"  # (a profile build is never persistent: the bf16 prefill rows run
#                                           the non-persistent kernel here)

import torch  # noqa: E402

import sparsemla.runtime.triton_backend as tb  # noqa: E402
from gluon_variant import parse_variant, shipped_gluon_entry, with_fields  # noqa: E402  (the script's folder)
from sparsemla.gen.gpu_measure import _calls, _State  # noqa: E402
from sparsemla.gen.spec import KernelSpec, config_label  # noqa: E402

DEFAULT_ROWS = "bf16:128:1,bf16:128:4,bf16:128:128,fp8:16:256,fp8:128:128,model1:16:256"
# (name, from slot, to slot): durations in cycles within one program
PHASES = [("compute group starts", 0, 1), ("tile 0 ready", 0, 2), ("tile 0 computed", 2, 3),
          ("all tiles computed", 2, 4), ("output written", 4, 5), ("loader starts", 0, 8),
          ("loader: tile 0 in", 8, 9), ("loader: all tiles in", 8, 10), ("program", 0, 5)]
WIDE = [("A starts", 0, 11), ("A: tile 0's P.V", 11, 12), ("A: all P.V", 11, 13), ("A: written", 13, 14)]
SECOND_LOADER = [("2nd loader starts", 0, 11), ("2nd loader: tile 1 in", 11, 12), ("2nd loader: all in", 11, 13)]
# (name, slot): sums over a program's tiles, printed per tile
PER_TILE = [("compute: wait for stage", 16), ("compute: stage to free", 17), ("  of which S's wgmma", 24),
            ("  softmax to P written", 25), ("loader: wait for free", 18), ("loader: free to ready", 19)]
WIDE_PER_TILE = [("A: wait for P", 22)]
SECOND_PER_TILE = [("2nd loader: wait for free", 20), ("2nd loader: free to ready", 21)]
SLOTS = 32
_buffers = []  # (module name, int64 tensor [programs, SLOTS]) of every profile launch prepared
_plain_init = tb._Kernel.__init__


def _init_with_prof(self, jit_fn, grid, args, constexprs, options, device):
    _plain_init(self, jit_fn, grid, args, constexprs, options, device)
    module = getattr(getattr(jit_fn, "fn", None), "__module__", "")
    if "_prof" in module:  # (a profile build's module name: ..._prof_<hash>)
        buf = torch.zeros(grid[0], SLOTS, dtype=torch.int64, device=device)
        self.kw["prof"] = buf
        _buffers.append((module, buf))


def stats(v: torch.Tensor) -> str:
    v = v.double()
    return f"{v.median().item():9.0f} {v.quantile(0.9).item():9.0f}"


def report(row: str, spec: KernelSpec, cfg, module: str, st: torch.Tensor) -> str:
    """The phase table of one profile launch's stamps ``st`` (int64 [programs, SLOTS], on the CPU)."""
    n = st.shape[0]
    per_split = -(-spec.topk // cfg.num_splits)
    tiles = -(-per_split // 64)
    start, end = st[:, 15], st[:, 6]
    cyc, ns = (st[:, 5] - st[:, 0]).double(), (end - start).double()
    lines = [f"\n{row} {config_label(cfg)} ({module}): {n} programs, {tiles} tiles each",
             f"  starts spread over {(start.max() - start.min()).item()} ns; kernel span (first start to last "
             f"end) {(end.max() - start.min()).item()} ns; program {stats(end - start)} ns (median, p90)",
             f"  SM clock while running: {(cyc / ns.clamp(min=1)).median().item():.2f} GHz",
             f"  {'phase':24s} {'median':>9s} {'p90':>9s}  (cycles)"]
    extra = WIDE if cfg.block_h == 64 else SECOND_LOADER if cfg.num_warps == 12 else []
    for name, a, b in PHASES + extra:
        ok = (st[:, a] != 0) & (st[:, b] != 0)
        if ok.any():
            lines.append(f"  {name:24s} {stats(st[ok, b] - st[ok, a])}")
    per_tile = WIDE_PER_TILE if cfg.block_h == 64 else SECOND_PER_TILE if cfg.num_warps == 12 else []
    for name, slot in PER_TILE + per_tile:
        if st[:, slot].any():  # (per tile: a loader of two takes every other tile)
            lines.append(f"  {name + ', per tile':24s} {stats(st[:, slot] / (tiles / 2 if cfg.num_warps == 12 and slot >= 18 else tiles))}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    rows = argv[argv.index("--rows") + 1] if "--rows" in argv else DEFAULT_ROWS
    fields = parse_variant(argv[argv.index("--with") + 1]) if "--with" in argv else {}
    tb._Kernel.__init__ = _init_with_prof
    with_fields({"profile": True, **fields})
    dev = torch.device("cuda")
    state = _State()
    for row in rows.split(","):
        entry = shipped_gluon_entry(row, dev)
        if entry is None:
            continue
        spec, T, cfg = entry
        _kw, sets, _ref = state.get(spec, T)
        calls = _calls(sets, cfg)
        for call in calls * 2:  # builds, then warms every set
            call()
        torch.cuda.synchronize()
        for _, buf in _buffers:
            buf.zero_()
        calls[0]()  # (its set was last used len(calls) - 1 calls ago)
        torch.cuda.synchronize()
        hits = [(m, b) for m, b in _buffers if b[:, 15].any()]
        if not hits:
            print(f"{row}: no profile stamps came back", flush=True)
            continue
        module, st = hits[-1]
        print(report(row, spec, cfg, module, st.cpu()), flush=True)
        _buffers.clear()
    with_fields(None)


if __name__ == "__main__":
    main(sys.argv[1:])
