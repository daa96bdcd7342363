"""Zero-width index lists on the GPU's auto path (session 29; tests/test_attention.py checks the same on the CPU
with the Triton kernel in the interpreter, fp16): an empty extra list leaves the main cache alone, an empty main
list leaves the extra cache (the two trade places, each keeping its page size and scale), and no slot at all gives
output 0 and LSE +inf with no launch. bf16 q, the tuned configs of the running GPU, each case called twice (the
second call takes the prepared launch), against the float64 reference of tests/helpers.py.
Run on the GPU after `pip install .`:  python3 benchmarks/calls/zero_width_gpu.py   (--cpu: a smoke run on the
CPU's interpreter, fp16)
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests"))
import sparsemla  # noqa: E402
from helpers import reference64, rel_err, two_caches  # noqa: E402

# kv_format, d_qk, main page, extra page
FORMATS = [("auto", 576, None, None), ("model1", 512, 256, 64), ("fp8_e4m3", 576, None, None)]
CASES = ("extra", "main", "both")


def run_case(kv_format, d_qk, page, x_page, empty, dev, dtype) -> bool:
    gen = torch.Generator().manual_seed(hash((kv_format, empty)) % (1 << 31))
    T, H = 5, 64
    xlen = torch.tensor([40, 5, 0, 64, 17], dtype=torch.int32)
    cache, xcache, idx, xidx, deq, xdeq, kw = two_caches(
        kv_format, d_qk, page, x_page, dtype, gen, topk=256, xtopk=64, slots=4096, x_slots=1024, xlen=xlen)
    if empty in ("main", "both"):
        idx = idx[:, :0]
    if empty in ("extra", "both"):
        xidx, xlen = xidx[:, :0], None
    q = torch.randn(T, H, d_qk, generator=gen).to(dtype)
    ref, ref_lse = reference64(q, deq, idx, d_qk ** -0.5, 512, x_deq=xdeq, x_indices=xidx, x_topk_length=xlen)
    ok = True
    for call in range(2):
        out, lse = sparsemla.sparse_mla(
            q.to(dev), cache.to(dev), idx.to(dev), sm_scale=d_qk ** -0.5, kv_format=kv_format, return_lse=True,
            extra_kv_cache=xcache.to(dev), extra_indices=xidx.to(dev),
            extra_topk_length=None if xlen is None else xlen.to(dev),
            backend="auto" if dev.type == "cuda" else "triton", **kw)
        out, lse = out.cpu(), lse.cpu()
        fin = torch.isfinite(ref_lse)
        err = rel_err(out, ref) if ref.abs().max() > 0 else out.abs().max().item()
        lerr = (lse.double()[fin] - ref_lse[fin]).abs().max().item() if fin.any() else 0.0
        good = bool(torch.isfinite(out).all()) and err < 1e-2 and lerr < 2e-2 and torch.equal(torch.isfinite(lse), fin)
        print(f"{kv_format:9s} empty {empty:5s} call {call + 1}: rel err {err:.2e} lse err {lerr:.1e} "
              f"{'ok' if good else 'FAIL'}")
        ok &= good
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cpu" if args.cpu else "cuda")
    dtype = torch.float16 if args.cpu else torch.bfloat16
    ok = all([run_case(*fmt, empty, dev, dtype) for fmt in FORMATS for empty in CASES])
    print("zero-width lists:", "all ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
