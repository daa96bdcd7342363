"""Issue 7 experiment (session 16's candidate, run in session 17 call 1): the Gluon kernels with Q
loaded by the computing warp group once the partitions run (GluonKernel.q_by_compute=True), against
Q loaded by its warps before the partitions start (False). With the first, the loading groups start
their index loads and gathers at once, so a program's first tile does not wait out Q's load latency:
a fixed cost per program, which matters where a program has few tiles (small T, many splits).
Session 17 made the first the rule for fp8 caches and the narrow kernel (gen/gluon.py).

For each shipped Gluon entry of the H200 table in the rows below, the entry's config with Q loaded
each way, each checked like a tuning trial (gen.gpu_measure.check: NaN in unreferenced slots) and
timed (CUDA-graph replay over rotating inputs), in one process.
Run on the GPU after `pip install .`: python3 benchmarks/calls/q_by_compute.py
(Session 17 call 3 ran it with --pv2, an option for the pv2 kernel, removed with that kernel.)
"""
import dataclasses

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.gpu_measure import _calls, _State, check, time_calls
from sparsemla.gen.spec import KernelSpec, config_label
from sparsemla.runtime.api import clear_call_cache
from sparsemla.runtime.dispatch import select_config

ROWS = [(fmt, H, T) for fmt in ("auto", "fp8_e4m3", "fp8_ds_mla", "model1") for H in (16, 128)
        for T in (1, 4, 16, 128)]
PAGE = {"fp8_ds_mla": 64, "model1": 64}
D_QK = {"model1": 512}


_PLAIN_FOR_CONFIG = GluonKernel.__dict__["for_config"]


def with_q_by_compute(on: bool | None):
    """Make the runtime launch Gluon modules with Q loaded by the computing group (True), before the
    partitions (False), or as gen.gluon's rule says (None)."""
    def for_config(cls, spec, config):
        return dataclasses.replace(_PLAIN_FOR_CONFIG.__func__(cls, spec, config), q_by_compute=on)
    tb.GluonKernel.for_config = _PLAIN_FOR_CONFIG if on is None else classmethod(for_config)
    clear_call_cache()


def main():
    dev = torch.device("cuda")
    state = _State()  # the tuner's poisoned inputs, reference rows and timing sets, one spec at a time
    lines = ["| format | H | T | config | Q before us | Q by compute us | ratio |", "|---|---|---|---|---|---|---|"]
    for fmt, H, T in ROWS:
        spec = KernelSpec(kv_format=fmt, d_qk=D_QK.get(fmt, 576), num_heads=H, page_size=PAGE.get(fmt, 1))
        cfg = select_config(spec, T, dev)
        if not cfg.gluon:
            continue
        kw, sets, ref = state.get(spec, T)
        res = {}
        for on in (False, True):
            with_q_by_compute(on)
            m = check(spec, cfg, kw, ref)
            res[on] = f"{time_calls(_calls(sets, cfg))[0]:.1f}" if m.ok else f"FAILED ({m.reason})"
        with_q_by_compute(None)
        try:
            ratio = f"{float(res[False]) / float(res[True]):.3f}"
        except ValueError:
            ratio = "-"
        line = f"| {fmt} | {H} | {T} | {config_label(cfg)} | {res[False]} | {res[True]} | {ratio} |"
        print(line, flush=True)
        lines.append(line)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
