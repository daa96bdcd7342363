"""One plain launch (after a warm-up) of sparse_mla with the shipped runtime's choice for a suite row, for a profiler
(session 43: ncu on GluonKernel.raw with an fp8_ds_mla cache, benchmarks/calls/h200_call_s43b.sh). --dequantize runs
the narrow dequantizing kernel instead (SPARSEMLA_RAW_FP8's rule off); the config is raw_rows.py's.
  python3 benchmarks/calls/raw_once.py [--format fp8_ds_mla] [--tokens 256] [--heads 16] [--slots 16384]"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import sparsemla  # noqa: E402
import sparsemla.runtime.triton_backend as tb  # noqa: E402
from raw_rows import spread_scales, table_config  # noqa: E402
from sparsemla.bench import FORMATS, make_cache  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", default="fp8_ds_mla")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--slots", type=int, default=16384)
    ap.add_argument("--dequantize", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    fmt = FORMATS[args.format]
    cache, kw = make_cache(fmt, dev)
    if fmt.kv_format == "fp8_ds_mla":
        spread_scales(cache)
    tb._RAW_FP8 = not args.dequantize
    g = torch.Generator(device=dev).manual_seed(1)
    T, H = args.tokens, args.heads
    q = torch.randn(T, H, fmt.d_qk, device=dev, generator=g).bfloat16()
    idx = torch.randint(0, args.slots, (T, 2048), device=dev, generator=g, dtype=torch.int32)
    cfg = table_config(fmt, T, H)
    for _ in range(2):
        out = sparsemla.sparse_mla(q, cache, idx, sm_scale=fmt.d_qk ** -0.5, kv_format=fmt.kv_format, config=cfg, **kw)
    torch.cuda.synchronize()
    kind = "dequantizing" if args.dequantize else "raw"
    print(f"{args.format} T={T} H={H} {kind}: out norm {out.float().norm():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
