"""bf16 correctness of every format x feature on the GPU (the CPU suite cannot check bf16: Triton's interpreter
multiplies raw bits in a bf16 tl.dot). Same traps as tests/: NaN in every unreferenced slot, -1 indices, topk_length
(past the list and below 0 too), an all-invalid row, sinks (+/-inf too), an extra cache, LSE, split-K and direct
write, q rows not 16-byte aligned, each with and without p_exchange (P through the per-program scratch); also the
Gluon kernel (Config.gluon, every format; no extra cache there).
Prints one line per case; exits 1 on a failure. Arguments: format cases to run (default all), and
`gluon` for the Gluon kernels' cases only (`narrow`: the narrow one's; `wide`: the wide one's with 4 splits, merged by
the combine kernel; `st1`: the narrow one-stage cases; `fused`: those
whose split-K partials are merged in the kernel; `empty`: many splits, most of them empty; `persistent`: the wide
kernel at T=1100 with 128 heads, 2200 units, which the runtime runs persistent with a bf16 cache and rope on 132
SMs and staged otherwise; `tail`: the same at T=1060 with the last round's units split (GluonKernel.tail_split,
forced on: 2112 whole units, then 4 tokens in 4 splits each, the last token's row all invalid), or `triton` for
the Triton kernel's cases only, e.g.
`python3 benchmarks/gpu_correctness.py auto576 gluon`. `--with FIELD=VALUE[+...]` runs the Gluon cases with those
GluonKernel fields replaced (a candidate, as benchmarks/calls/gluon_variant.py sets it; a case the candidate does
not apply to is skipped)."""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import sparsemla  # noqa: E402
from sparsemla.gen.spec import Config  # noqa: E402
from helpers import FORMAT_CASES, make_cache, poison_unreferenced, random_indices, reference64, rel_err  # noqa: E402

dev = torch.device("cuda")
failed = []
# (splits, features, p_exchange, gluon, heads, block_h, num_warps, num_stages)
TRITON_CASES = [(s, f, px, False, 128, 64, 8, 2) for s in (1, 4) for f in ("plain", "sink+extra+lse")
                for px in (False, True)]
# The wide Gluon kernel at 128 heads, and at 32 and 16 (one 64-row block with the rest masked); the
# narrow one (heads as wgmma's N) at 16, 32 and 24 heads (two 16-head blocks, the second half masked),
# with one loading warp group or (fp8) two, 16-head programs with one stage (two per SM), and 128 heads
# as eight 16-head programs (the T=1 entries of session 16) or four 32-head ones (session 18's candidate).
GLUON_CASES = [(s, f, False, True, h, bh, w, st) for h, bh, w, st in (
    (128, 64, 8, 2), (32, 64, 8, 2), (16, 64, 8, 2), (16, 16, 8, 2), (32, 32, 8, 2), (24, 16, 8, 2), (16, 16, 12, 2),
    (32, 32, 12, 2), (16, 16, 8, 1), (24, 16, 8, 1), (128, 16, 8, 2), (128, 32, 8, 2)) for s in (1, 4)
    for f in ("plain", "sink+lse")]
# full 64-head programs with 2 splits merge the partials in the kernel (runtime/triton_backend._fused, session 21)
FUSED_CASES = [(2, f, False, True, h, 64, 8, 2) for h in (128, 64) for f in ("plain", "sink+lse")]
GLUON_CASES += FUSED_CASES
# 16-32 splits of a top-k of 256: 4 splits hold a tile, the rest write empty partials (-inf LSE) for the combine
# (session 22: with SPREAD, measured and removed, fp8_ds_mla failed the 16-head one-stage case)
EMPTY_CASES = [(s, f, False, True, h, bh, w, st) for s, h, bh, w, st in (
    (32, 16, 16, 8, 1), (16, 128, 16, 8, 2), (32, 32, 64, 8, 2), (32, 16, 16, 12, 2)) for f in ("plain", "sink+lse")]
GLUON_CASES += EMPTY_CASES
# the wide kernel without split-K over 2200 units (runtime/triton_backend.persistent_for, _staged_out; session 24)
PERSISTENT_CASES = [(1, f, False, True, 128, 64, 8, 2) for f in ("plain", "sink+lse")]
WITH = None
if "--with" in sys.argv:
    at = sys.argv.index("--with")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "calls"))
    from gluon_variant import parse_variant, with_fields  # noqa: E402
    WITH = parse_variant(sys.argv[at + 1])
    with_fields(WITH)
    del sys.argv[at:at + 2]
TAIL = "tail" in sys.argv[1:]
if TAIL:  # (on by default; forced past SPARSEMLA_TAIL_SPLIT=0, read at import)
    import sparsemla.runtime.triton_backend as tb
    tb._TAIL_SPLIT = True
only = [a for a in sys.argv[1:]
        if a not in ("gluon", "narrow", "wide", "st1", "fused", "empty", "persistent", "tail", "triton")]
TOKENS = 1100 if "persistent" in sys.argv[1:] else 1060 if TAIL else 6
kernel_cases = TRITON_CASES if "triton" in sys.argv[1:] else FUSED_CASES if "fused" in sys.argv[1:] \
    else PERSISTENT_CASES if "persistent" in sys.argv[1:] or TAIL \
    else EMPTY_CASES if "empty" in sys.argv[1:] \
    else [c for c in GLUON_CASES if c[7] == 1] if "st1" in sys.argv[1:] \
    else [c for c in GLUON_CASES if c[5] < 64] if "narrow" in sys.argv[1:] \
    else [c for c in GLUON_CASES if c[5] == 64 and c[0] > 2] if "wide" in sys.argv[1:] \
    else GLUON_CASES if "gluon" in sys.argv[1:] else TRITON_CASES + GLUON_CASES
for case, (fmt, d_qk, page) in FORMAT_CASES.items():
    if only and case not in only:
        continue
    for splits, features, px, gl, H, bh, warps, stages in kernel_cases:
        if warps == 12 and fmt == "auto":
            continue  # two loading warp groups: fp8 caches only
        gen = torch.Generator().manual_seed(hash((case, splits, features)) % (1 << 31))
        T, topk, xtopk, slots = TOKENS, 256, 64, 2048
        cache, kw, deq = make_cache(fmt, d_qk, slots, page, torch.bfloat16, gen)
        idx = random_indices(T, topk, slots, gen)
        idx[3] = -1
        if TAIL:
            idx[-1] = -1  # a tail token with no valid slot: each of its splits is empty
        # lengths past the list and below 0 count as its ends: the kernel gets tl_given / xlen_given, the poisoning
        # and the reference their clamped tl_ / xlen
        tl_given = torch.tensor([topk, 100, topk, topk + 7, 1, -2] * -(-T // 6), dtype=torch.int32)[:T]
        tl_ = tl_given.clamp(0, topk)
        extra = {}
        sink = None
        x = dict(x_deq=None, x_indices=None, x_topk_length=None)
        if features == "sink+lse":
            sink = torch.randn(H, generator=gen)
            sink[0], sink[1] = math.inf, -math.inf
            extra = dict(attn_sink=sink.to(dev))
        elif features != "plain":
            xcache, xkw, xdeq = make_cache(fmt, d_qk, 512, page, torch.bfloat16, gen)
            xidx = random_indices(T, xtopk, 512, gen)
            xlen_given = torch.tensor([xtopk, 3, -1, xtopk + 5, xtopk, 10] * -(-T // 6), dtype=torch.int32)[:T]
            xlen = xlen_given.clamp(0, xtopk)
            xcache = poison_unreferenced(xcache, fmt, page or 1, torch.cat([xidx[t, :int(xlen[t])] for t in range(T)]))
            sink = torch.randn(H, generator=gen)
            sink[0], sink[1] = math.inf, -math.inf
            extra = dict(extra_kv_cache=xcache.to(dev), extra_indices=xidx.to(dev),
                         extra_topk_length=xlen_given.to(dev),
                         attn_sink=sink.to(dev), **({"extra_page_size": page} if fmt == "model1" else {}),
                         **({"extra_kv_scale": xkw["kv_scale"]} if "kv_scale" in xkw else {}))
            x = dict(x_deq=xdeq, x_indices=xidx, x_topk_length=xlen)
        cache = poison_unreferenced(cache, fmt, page or 1, torch.cat([idx[t, :int(tl_[t])] for t in range(T)]))
        q = torch.randn(T, H, d_qk, generator=gen).bfloat16()
        q_dev = q.to(dev)
        if features != "plain":  # rows 3 elements apart beyond d_qk: not 16-byte aligned (the Gluon
            # kernel's cp.async of Q needs them so: the runtime copies such a q first)
            q_dev = torch.zeros(T, H, d_qk + 3, dtype=q.dtype, device=dev)[..., :d_qk]
            q_dev.copy_(q)
        try:
            out, lse = sparsemla.sparse_mla(q_dev, cache.to(dev), idx.to(dev), sm_scale=d_qk ** -0.5, kv_format=fmt,
                                            topk_length=tl_given.to(dev), return_lse=True, backend="triton",
                                            config=Config(bh, 64, splits, warps, stages, p_exchange=px, gluon=gl), **kw,
                                            **extra)
        except ValueError as e:
            if WITH is None or "no Gluon kernel" not in str(e):
                raise
            continue  # (the candidate's fields do not apply to this kernel)
        ref, rlse = reference64(q, deq, idx, d_qk ** -0.5, 512, topk_length=tl_, sink=sink, **x)
        err = rel_err(out.cpu(), ref)
        fin = torch.isfinite(rlse)
        lerr = (lse.cpu().double()[fin] - rlse[fin]).abs().max().item()
        ok = (torch.isfinite(out).all().item() and err < 1e-2 and lerr < 2e-2
              and torch.equal(torch.isfinite(lse.cpu()), fin))
        kern = 'px' if px else f'gl h{bh} w{warps}' + (' st1' if stages == 1 else '') if gl else '  '
        tokens = f" T={T}" if T != 6 else ""
        print(f"{case:14s}{tokens} H={H:3d} splits={splits} {features:15s} {kern:11s} rel err {err:.2e} "
              f"lse err {lerr:.1e} {'ok' if ok else 'FAIL'}")
        if not ok:
            failed.append((case, H, splits, features, kern))
print("bf16 GPU correctness:", "all ok" if not failed else f"FAILED {failed}")
sys.exit(1 if failed else 0)
