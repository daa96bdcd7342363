"""Issue 7 experiment harness (session 17): shipped Gluon entries of the H200 table against variants of
their modules, GluonKernel fields replaced (e.g. q_regs=4: group B of the wide kernel keeps Q's first
256 columns in registers; p_regs=True: it takes P for its own P.V from registers; q_by_compute=True).
Each is checked like a tuning trial (gen.gpu_measure.check: NaN in unreferenced slots) and timed
(CUDA-graph replay over rotating inputs), in one process; a variant that cannot build for a row's
kernel (e.g. q_regs with the narrow kernel) is shown as "-".

  python3 benchmarks/calls/gluon_variant.py q_regs=4 p_regs=True q_regs=4+p_regs=True [--rows bf16:128:128,...]
      [--reps N]
  (on the GPU after `pip install .`; rows are FORMAT:H:T with FORMAT one of the suite's formats,
  gen/suite.py's SUITE_FORMATS, timing the H200 table's entry, or FORMAT:H:T:CONFIG timing that Gluon config,
  e.g. fp8:16:256:h16.s1.w12.st2; default: the bf16 rows of issue 7 that trail FlashInfer). --reps N (session 48)
times each kernel N times, the kernels in alternating orders, and shows the median.
"""
import dataclasses
import re
import sys

import torch

import sparsemla.runtime.triton_backend as tb
from sparsemla.gen.gluon import GluonKernel
from sparsemla.gen.gpu_measure import _calls, _State, check, time_calls
from sparsemla.gen.spec import Config, KernelSpec, config_label
from sparsemla.gen.suite import SUITE_FORMATS
from sparsemla.runtime.api import clear_call_cache
from sparsemla.runtime.dispatch import select_config

DEFAULT_ROWS = "bf16:128:16,bf16:128:32,bf16:128:128,bf16:64:128,bf16_nope:128:128,bf16:128:4096"
_PLAIN_FOR_CONFIG = GluonKernel.__dict__["for_config"]
# GluonKernel fields whose None means "by rule"
_DERIVED = ("q_by_compute", "q_async", "q_regs", "bf16_scale", "c_prefetch")


def with_fields(fields: dict | None):
    """Make the runtime launch Gluon modules with these GluonKernel fields replaced (None: as shipped)."""
    if fields and "persistent" in fields:
        raise ValueError("persistent is the runtime's launch rule (its grid depends on it): patch "
                         "triton_backend._persistent instead")
    def for_config(cls, spec, config, **launch_fields):
        # The rules' fields (None: derived in __post_init__) are derived again for the variant unless it
        # sets them: the plain kernel's q_regs=4 would otherwise ride along into two_consumers=True.
        # launch_fields are the runtime's launch rules and pass through: persistent, staged_out and tail_split, which
        # the launch sizes its grid by (patch the rules, e.g. triton_backend._persistent, to change them), and
        # pdl_wait, which a variant's fields may set.
        derived = {f: None for f in _DERIVED if f not in fields}
        return dataclasses.replace(_PLAIN_FOR_CONFIG.__func__(cls, spec, config, **launch_fields), **derived,
                                   **fields)
    tb.GluonKernel.for_config = _PLAIN_FOR_CONFIG if fields is None else classmethod(for_config)
    clear_call_cache()


def row_config(text: str) -> Config:
    """A Gluon config written hBLOCK_H.sSPLITS.wWARPS.stSTAGES (e.g. h16.s1.w12.st2; 64-key tiles)."""
    m = re.fullmatch(r"h(\d+)\.s(\d+)\.w(\d+)\.st(\d+)", text)
    if m is None:
        raise ValueError(f"config {text!r}: expected hBLOCK_H.sSPLITS.wWARPS.stSTAGES, e.g. h16.s1.w12.st2")
    block_h, splits, warps, stages = map(int, m.groups())
    return Config(block_h, 64, splits, warps, stages, gluon=True)


def shipped_gluon_entry(row: str, dev):
    """(spec, T, config) of row FORMAT:H:T (the H200 table's entry) or FORMAT:H:T:CONFIG (that config, see
    row_config), or None (printed) where the table's entry is not a Gluon kernel."""
    fmt, H, T, *given = row.split(":")
    kv_format, d_qk, page = SUITE_FORMATS[fmt]
    spec = KernelSpec(kv_format=kv_format, d_qk=d_qk, num_heads=int(H), page_size=page)
    cfg = row_config(given[0]).check(spec) if given else select_config(spec, int(T), dev)
    if not cfg.gluon:
        print(f"{row}: the shipped entry ({config_label(cfg)}) is not a Gluon kernel; skipped", flush=True)
        return None
    return spec, int(T), cfg


def parse_variant(arg: str) -> dict:
    """FIELD=VALUE[+FIELD=VALUE...] as GluonKernel fields (ints and True/False parsed)."""
    fields = {}
    for part in arg.split("+"):
        name, value = part.split("=")
        fields[name] = {"True": True, "False": False}.get(value, int(value) if value.lstrip("-").isdigit() else value)
    return fields


def main(argv: list[str]) -> None:
    rows_arg = DEFAULT_ROWS
    if "--rows" in argv:
        rows_arg = argv[argv.index("--rows") + 1]
        argv = argv[:argv.index("--rows")] + argv[argv.index("--rows") + 2:]
    reps = 1
    if "--reps" in argv:
        reps = int(argv[argv.index("--reps") + 1])
        argv = argv[:argv.index("--reps")] + argv[argv.index("--reps") + 2:]
    variants = [parse_variant(a) for a in argv]
    dev = torch.device("cuda")
    state = _State()  # the tuner's poisoned inputs, reference rows and timing sets, one spec at a time
    names = [",".join(f"{k}={v}" for k, v in v.items()) for v in variants]
    lines = ["| format | H | T | config | shipped us | " + " | ".join(f"{n} us" for n in names) + " |",
             "|---|---|---|---|---|" + "---|" * len(names)]
    for row in rows_arg.split(","):
        entry = shipped_gluon_entry(row, dev)
        if entry is None:
            continue
        spec, T, cfg = entry
        fmt, H = row.split(":")[:2]
        kw, sets, ref = state.get(spec, T)
        kernels = [None] + variants
        res, times = {}, {i: [] for i in range(len(kernels))}
        for i, fields in enumerate(kernels):  # each checked first
            try:
                with_fields(fields)
                m = check(spec, cfg, kw, ref)
                if not m.ok:
                    res[i] = f"FAILED ({m.reason})"
            except ValueError as e:  # the variant does not exist for this kernel
                res[i] = "-"
                print(f"{row} {fields}: {e}", flush=True)
        for rep in range(reps):  # then timed, in alternating orders
            order = range(len(kernels)) if rep % 2 == 0 else reversed(range(len(kernels)))
            for i in (i for i in order if i not in res):
                with_fields(kernels[i])
                times[i].append(time_calls(_calls(sets, cfg))[0])
        with_fields(None)
        res = [res.get(i) or f"{sorted(times[i])[len(times[i]) // 2]:.1f}" for i in range(len(kernels))]
        line = f"| {fmt} | {H} | {T} | {config_label(cfg)} | " + " | ".join(res) + " |"
        print(line, flush=True)
        lines.append(line)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
