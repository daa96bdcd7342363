"""Issue 7 experiment (session 33, call 1): the narrow bf16 Gluon kernel with two computing warp groups (Config
num_warps=12, GluonKernel.m_groups=2: M takes the even tiles, M1 the odd ones, M merges; measured 0.58-1.00x and
removed, commit 5de07e2 has it) against the H200 table's entries, in one process; it times any Gluon configs so.
Each config is checked like a tuning trial (gen.gpu_measure.check: NaN in unreferenced slots), then all of a row's
configs are timed (CUDA-graph replay over rotating inputs, the suite's measure) in rotating orders, the first of each
repetition moving on and every other repetition reversed (a pair's first runs faster: session 24); median us.

  python3 benchmarks/calls/m_groups.py [--reps 4] FORMAT:T:H[:CONFIG+CONFIG...] ...
  (CONFIG as gluon_variant.row_config, e.g. h16.s16.w8.st1; without configs: the table's entry with num_warps=12
  where it is a 16-head two-stage Gluon entry, which with a bf16 cache only the 5de07e2 tree builds)
"""
import dataclasses
import statistics
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gluon_variant import row_config  # noqa: E402

from sparsemla.gen.gpu_measure import _calls, _State, check, time_calls  # noqa: E402
from sparsemla.gen.spec import config_label  # noqa: E402
from sparsemla.gen.suite import suite_spec  # noqa: E402
from sparsemla.runtime.dispatch import select_config  # noqa: E402


def candidates(shipped, given: list[str]) -> list:
    if given:
        return [row_config(c) for c in given]
    if shipped.gluon and shipped.block_h == 16 and shipped.num_stages == 2:
        return [dataclasses.replace(shipped, num_warps=12)]
    return []


def main(argv: list[str]) -> None:
    reps = 4
    if "--reps" in argv:
        reps = int(argv[argv.index("--reps") + 1])
        argv = argv[:argv.index("--reps")] + argv[argv.index("--reps") + 2:]
    dev = torch.device("cuda")
    state = _State()
    lines = ["| format | T | H | shipped | us | candidate | us | shipped / candidate |",
             "|---|---|---|---|---|---|---|---|"]
    for row in argv:
        fmt, T, H, *given = row.split(":")
        T, H = int(T), int(H)
        spec = suite_spec(fmt, H, "sm90")
        shipped = select_config(spec, T, dev)
        configs = [shipped] + [c for c in candidates(shipped, given[0].split("+") if given else []) if c != shipped]
        kw, sets, ref = state.get(spec, T)
        ok = []
        for c in configs:
            try:
                m = check(spec, c.check(spec), kw, ref)
                print(f"{fmt} T={T} H={H} {config_label(c)}: {'ok' if m.ok else 'FAILED ' + m.reason} "
                      f"(rel err {m.error:.2e})", flush=True)
            except ValueError as e:
                print(f"{fmt} T={T} H={H} {config_label(c)}: {e}", flush=True)
                continue
            if m.ok:
                ok.append(c)
        times = {c: [] for c in ok}
        for r in range(reps):
            order = ok[r % len(ok):] + ok[:r % len(ok)]
            for c in (order if r % 2 == 0 else order[::-1]):
                times[c].append(time_calls(_calls(sets, c))[0])
        med = {c: statistics.median(v) for c, v in times.items()}
        print(f"{fmt} T={T} H={H} runs: " + "; ".join(f"{config_label(c)} {[round(x, 2) for x in v]}"
                                                     for c, v in times.items()), flush=True)
        base = med.get(shipped)
        for c in ok[1:]:
            ratio = f"{base / med[c]:.3f}" if base else "-"
            lines.append(f"| {fmt} | {T} | {H} | {config_label(shipped)} | {base:.2f} | {config_label(c)} | "
                         f"{med[c]:.2f} | {ratio} |")
            print(lines[-1], flush=True)
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
