"""(Needs commit 0817c6a: GluonKernel.parts_f16 and the combine's PARTS_F16 were measured and removed in
session 35.) Issue 7 diagnostic (session 34): the combine kernel alone on float32 partials against PARTS_F16's float16 ones
(the same merged values), CUDA-graph replay (triton.testing.do_bench_cudagraph, median us), to see which side of
parts_f16's loss (call 8: 0.87-0.95x) the combine is. Shapes as the runtime's: its BLOCK_DV
(runtime/triton_backend.combine_columns) and PARTS_FIRST where the grid has at most one program per SM. Run on the
GPU after `pip install .`:
  python3 benchmarks/calls/combine16_time.py [--rows 1:128:16,64:16:2,...]   (T:H:splits)
"""
import argparse
import os
import sys

import torch
from triton.testing import do_bench_cudagraph

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
from helpers import pack_parts_f16  # noqa: E402
from sparsemla.gen.render import load_module  # noqa: E402
from sparsemla.gen.spec import KernelSpec  # noqa: E402
from sparsemla.runtime.triton_backend import combine_columns, next_pow2  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1:128:16,1:64:32,4:16:16,64:16:2,1:16:32")
    args = ap.parse_args()
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    print("| T | H | splits | BLOCK_DV | programs | float32 us | float16 us | max abs diff |\n"
          "|---|---|---|---|---|---|---|---|")
    for row in args.rows.split(","):
        T, H, S = map(int, row.split(":"))
        spec = KernelSpec(num_heads=H, arch="sm90")
        comb = load_module(spec).sparse_mla_combine
        parts = torch.randn(T * H * S, 512, device=dev)
        lse2 = torch.randn(T * H * S, device=dev)
        p16, l16 = pack_parts_f16(parts.cpu(), lse2.cpu())
        p16, l16 = p16.to(dev), l16.to(dev)
        bdv = combine_columns(S, 512)
        grid = (T * H, 512 // bdv)
        pf = grid[0] * grid[1] <= sms
        outs, times = [], []
        for o_part, lse_part, f16 in ((parts.reshape(-1), lse2, False), (p16, l16, True)):
            out = torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)
            run = lambda: comb[grid](o_part, lse_part, lse_part, out, *out.stride(), lse_part, 0, 0, H,  # noqa: E731
                                     NUM_SPLITS=S, SPLITS_P2=next_pow2(S), BLOCK_DV=bdv, PDL=False, PARTS_FIRST=pf,
                                     TRIGGER=False, PARTS_F16=f16, num_warps=4)
            run()
            times.append(do_bench_cudagraph(run, rep=200))
            outs.append(out.float())
        diff = (outs[0] - outs[1]).abs().max().item()
        print(f"| {T} | {H} | {S} | {bdv} | {grid[0] * grid[1]} | {times[0] * 1e3:.2f} | {times[1] * 1e3:.2f} | "
              f"{diff:.3g} |", flush=True)


if __name__ == "__main__":
    main()
