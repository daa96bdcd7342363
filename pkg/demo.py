"""``sparsemla demo``: render, run and check a default decode problem on the present device.

On a CUDA GPU it runs the generated kernel (bf16); on a CPU it runs the same generated kernel in
Triton's interpreter (fp32 compute, since the interpreter's bf16 tl.dot is broken) on a smaller
problem. It prints the backend, spec, config, error against the fp32 reference and the time.
"""
from __future__ import annotations

import argparse
import os
import time


def demo_main(argv=None):
    ap = argparse.ArgumentParser(prog="sparsemla demo", description=__doc__)
    ap.add_argument("--tokens", type=int, default=None, help="query tokens (default 4 on GPU, 2 on CPU)")
    ap.add_argument("--heads", type=int, default=None, help="heads (default 128 on GPU, 16 on CPU)")
    ap.add_argument("--topk", type=int, default=None, help="top-k (default 2048 on GPU, 128 on CPU)")
    args = ap.parse_args(argv)
    import torch
    cuda = torch.cuda.is_available()
    if not cuda:
        os.environ["TRITON_INTERPRET"] = "1"  # before the generated module is imported
    import sparsemla
    from sparsemla.gen.spec import KernelSpec
    from sparsemla.runtime.api import device_arch
    from sparsemla.runtime.dispatch import select_config

    dev = torch.device("cuda" if cuda else "cpu")
    T = args.tokens or (4 if cuda else 2)
    H = args.heads or (128 if cuda else 16)
    topk = args.topk or (2048 if cuda else 128)
    slots = 65536 if cuda else 4096
    dtype = torch.bfloat16 if cuda else torch.float32
    g = torch.Generator(device=dev).manual_seed(0)
    cache = torch.randn(slots, 576, device=dev, generator=g).to(dtype)
    q = torch.randn(T, H, 576, device=dev, generator=g).to(dtype)
    idx = torch.randint(0, slots, (T, topk), device=dev, dtype=torch.int32, generator=g)
    idx[:, ::7] = -1
    scale = 576 ** -0.5
    spec = KernelSpec(num_heads=H, topk=topk, arch=device_arch(dev), q_dtype="bf16" if cuda else "fp32",
                      compute_dtype="bf16" if cuda else "fp32")
    cfg = select_config(spec, T, dev)
    t0 = time.perf_counter()
    out = sparsemla.sparse_mla(q, cache, idx, sm_scale=scale, backend="triton")
    if cuda:
        torch.cuda.synchronize()
    first = time.perf_counter() - t0
    ref = sparsemla.sparse_mla(q, cache, idx, sm_scale=scale, backend="torch").float()
    err = ((out.float() - ref).norm() / ref.norm()).item()
    if cuda:
        from triton.testing import do_bench
        us = do_bench(lambda: sparsemla.sparse_mla(q, cache, idx, sm_scale=scale, out=out, backend="triton"),
                      return_mode="median") * 1e3
        timing = f"{us:.1f} us per call (do_bench median, host overhead included)"
    else:
        timing = f"{first:.2f} s in Triton's interpreter (first call, includes rendering)"
    print(f"device:  {torch.cuda.get_device_name(dev) if cuda else 'CPU (Triton interpreter)'}")
    print("backend: triton (generated kernel)")
    print(f"spec:    {spec.key}")
    print(f"config:  {cfg}")
    print(f"problem: T={T} H={H} d_qk=576 d_v=512 top-k={topk} of {slots} slots, 1/7 of indices -1")
    print(f"error:   {err:.2e} relative L2 vs the fp32 PyTorch reference")
    print(f"time:    {timing}")
    ok = err < (2e-2 if cuda else 1e-4)
    print("check:   " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1
