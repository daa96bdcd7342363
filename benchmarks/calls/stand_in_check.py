"""Issue 7 check (session 16): calls whose spec has no tuned entry of its own run a stand-in's entry
(runtime/dispatch.py stand_ins: the plain call's entry for a sink or LSE output, another tuned page
size, the next power-of-two head count). Is that entry faster than the default config they ran
before stand-ins existed, and correct?

Each row: the stand-in's config and the arch's default config, each checked and timed like a tuning
trial (gen.gpu_measure: NaN in unreferenced slots, CUDA-graph replay over rotating inputs), in one
process. Run on the GPU after `pip install .`: python3 benchmarks/calls/stand_in_check.py
"""
import torch

from sparsemla.gen.gpu_measure import GpuMeasurer
from sparsemla.gen.spec import KernelSpec, config_label, default_config
from sparsemla.runtime.dispatch import _gpu, _num_sms, _page_sizes, _table, select_config, stand_ins

ROWS = [  # (what differs from the tuned specs, spec, token counts)
    ("sink + LSE", KernelSpec(kv_format="model1", d_qk=512, num_heads=128, page_size=64, has_sink=True,
                              return_lse=True), (1, 64, 128)),
    ("sink + LSE", KernelSpec(kv_format="fp8_ds_mla", num_heads=16, page_size=64, has_sink=True,
                              return_lse=True), (64, 256)),
    ("page 64", KernelSpec(kv_format="auto", num_heads=128, page_size=64), (1, 128)),
    ("8 heads", KernelSpec(kv_format="auto", num_heads=8), (64, 256)),
    ("8 heads", KernelSpec(kv_format="fp8_e4m3", num_heads=8), (256,)),
]


def main():
    dev = torch.device("cuda")
    measure = GpuMeasurer(120.0)
    lines = ["| differs | spec | T | stand-in | stand-in us | default | default us | default/stand-in |",
             "|---|---|---|---|---|---|---|---|"]
    try:
        for what, spec, tokens in ROWS:
            table = _table(_gpu(dev), spec.family)
            by = next((s for s in stand_ins(spec, _page_sizes(_gpu(dev), spec.family)) if s.key in table), None)
            for T in tokens:
                cfg, dflt = select_config(spec, T, dev), default_config(spec, T, _num_sms(dev))
                a, b = measure(spec, cfg, T), measure(spec, dflt, T)
                fmt = lambda m: f"{m.time_us:.1f}" if m.ok else f"FAILED ({m.reason})"  # noqa: E731
                ratio = f"{b.time_us / a.time_us:.2f}" if a.ok and b.ok else "-"
                line = (f"| {what} | {spec.key} (entry of {by.key if by else 'none'}) | {T} | {config_label(cfg)} | "
                        f"{fmt(a)} | {config_label(dflt)} | {fmt(b)} | {ratio} |")
                print(line, flush=True)
                lines.append(line)
    finally:
        measure.close()
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
