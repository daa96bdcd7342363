"""Issue 7 experiment (session 16): where a small-T decode call's time goes (T=1, 4).

For each row and config, timed like a tuning trial (gen.gpu_measure: CUDA-graph replay over rotating
input sets), microseconds per call:
  full     attention kernel + combine;
  fwd      the attention kernel alone (the prepared call's combine dropped; timing only);
  combine  the combine alone (the attention kernel dropped; it reads stale partials; timing only);
  nop      one empty one-program Triton kernel per call: the graph's floor per launch.
Call 1 (at commit 8caf981) also timed the combine launched as a programmatic dependent (PDL) of the
attention kernel; that was removed (benchmarks/results/session16/README.md). Call 2 adds the narrow
kernel (16 heads per program) at 128 and 64 heads: its partials are a quarter of the wide kernel's.
Run on the GPU after `pip install .`: python3 benchmarks/calls/small_t_diag.py
"""
import torch
import triton

import sparsemla.runtime.api as api
from sparsemla.gen.gpu_measure import _calls, time_calls, timing_sets
from sparsemla.gen.spec import Config, KernelSpec
from sparsemla.runtime.dispatch import select_config


@triton.jit
def _nop(x):
    pass


def prepared_launch():
    (entry,) = api._calls.values()  # one signature was called since the cache was cleared
    return entry.launch


def time_parts(sets, cfg):
    res = {}
    for mode in ("full", "fwd", "combine"):
        api.clear_call_cache()
        calls = _calls(sets, cfg)
        try:
            calls[0]()
            launch = prepared_launch()
            if mode != "full" and launch.combine is None:
                continue  # no split-K: nothing to take apart
            if mode == "fwd":
                launch.combine = None
            elif mode == "combine":
                launch.fwd = lambda vals: None
            res[mode] = time_calls(calls)[0]
        except Exception as e:  # noqa: BLE001 (report and go on)
            print(f"  {mode}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    api.clear_call_cache()
    return res


def main():
    dev = torch.device("cuda")
    x = torch.zeros(1, device=dev)
    print(f"nop kernel: {time_calls([lambda: _nop[(1,)](x)] * 8)[0]:.2f} us per launch", flush=True)
    rows = [("auto", 576, 128, 1), ("auto", 576, 128, 4), ("auto", 576, 64, 1), ("fp8_ds_mla", 576, 128, 1)]
    lines = ["| format | H | T | config | full | fwd | combine |", "|---|---|---|---|---|---|---|"]
    for fmt, d_qk, H, T in rows:
        spec = KernelSpec(kv_format=fmt, d_qk=d_qk, num_heads=H, page_size=64 if fmt in ("fp8_ds_mla", "model1") else 1)
        sets = timing_sets(spec, T, dev)
        shipped = select_config(spec, T, dev)
        cfgs = [shipped]
        if H >= 64:
            cfgs += [Config(64, 64, s, 8, 2, gluon=True) for s in (16, 32)]
            cfgs += [Config(16, 64, s, 8, st, gluon=True) for s in (4, 8, 16) for st in (2, 1)]
        cfgs = list(dict.fromkeys(cfgs))
        for cfg in cfgs:
            r = time_parts(sets, cfg)
            label = f"s{cfg.num_splits} {'gl' if cfg.gluon else 'triton'} h{cfg.block_h} st{cfg.num_stages}"
            line = f"| {fmt} | {H} | {T} | {label}{' (shipped)' if cfg == shipped else ''} | " + \
                " | ".join(f"{r[k]:.1f}" if k in r else "-" for k in ("full", "fwd", "combine")) + " |"
            print(line, flush=True)
            lines.append(line)
        del sets
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
