"""Experiment (issue 7): split the 512 output columns across DV_SPLIT programs of one warp group.

The shipped 64-head kernel runs one 8-warp CTA per SM (a 64 x 512 fp32 accumulator is 128
registers a thread), so softmax never overlaps an MMA. Here each program owns 512 / DV_SPLIT
output columns (and recomputes the full S, as both warp groups of the shipped kernel already do):
at n16 (dv2) or n32 (dv4) two CTAs fit an SM (sm_90a: 111 / 82 KB smem, 225 / 167 registers),
so one CTA's softmax can overlap the other's wgmma. bf16, page_size 1, no sink/lse/topk_length.
Times each variant by CUDA-graph replay (pkg/bench.py's method) next to the shipped config.
  python3 benchmarks/proto_dvsplit.py --out $OUT
"""
import argparse
import json
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def dvsplit_fwd(q, stride_qt, stride_qh, kv, stride_row, num_slots, idx, stride_it,
                out, stride_ot, stride_oh, o_part, lse_part, sm_scale, num_heads, num_splits,
                BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, TOPK: tl.constexpr,
                DV_SPLIT: tl.constexpr, L2P: tl.constexpr, SPLIT_K: tl.constexpr):
    # Program order: token, split, head block, then the DV_SPLIT parts (adjacent: they gather
    # the same rows, which the second one finds in L2).
    pid = tl.program_id(0)
    part = pid % DV_SPLIT
    r = pid // DV_SPLIT
    head_blocks = tl.cdiv(num_heads, BLOCK_H)
    hb = r % head_blocks
    split = (r // head_blocks) % num_splits
    t = (r // head_blocks // num_splits).to(tl.int64)
    DVP: tl.constexpr = 512 // DV_SPLIT
    heads = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    hmask = heads < num_heads
    qb = q + t * stride_qt + heads[:, None] * stride_qh
    own = part * DVP
    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, DVP], dtype=tl.float32)
    score_scale = sm_scale * 1.4426950408889634
    q_own = tl.load(qb + own + tl.arange(0, DVP)[None, :], mask=hmask[:, None], other=0.0)
    q_rope = tl.load(qb + 512 + tl.arange(0, 64)[None, :], mask=hmask[:, None], other=0.0)
    q_o1 = tl.load(qb + (own + DVP) % 512 + tl.arange(0, DVP)[None, :], mask=hmask[:, None], other=0.0)
    if DV_SPLIT == 4:
        q_o2 = tl.load(qb + (own + 2 * DVP) % 512 + tl.arange(0, DVP)[None, :], mask=hmask[:, None], other=0.0)
        q_o3 = tl.load(qb + (own + 3 * DVP) % 512 + tl.arange(0, DVP)[None, :], mask=hmask[:, None], other=0.0)
    chunk = tl.cdiv(tl.cdiv(TOPK, num_splits), BLOCK_N) * BLOCK_N
    lo = split * chunk
    hi = tl.minimum(lo + chunk, TOPK)
    for start in range(lo, hi, BLOCK_N):
        if L2P > 0:
            if start + L2P * BLOCK_N < hi:
                offs_pf = start + L2P * BLOCK_N + tl.arange(0, BLOCK_N)
                slot_pf = tl.load(idx + t * stride_it + offs_pf, mask=offs_pf < hi, other=0).to(tl.int64)
                slot_pf = tl.where((slot_pf >= 0) & (slot_pf < num_slots), slot_pf, 0)
                line_pf = tl.minimum(tl.arange(0, 16) * 128, 1151) // 2
                tl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l",
                                          [kv + slot_pf[:, None] * stride_row + line_pf[None, :]],
                                          dtype=tl.int32, is_pure=False, pack=1)
        offs_n = start + tl.arange(0, BLOCK_N)
        in_list = offs_n < hi
        slot = tl.load(idx + t * stride_it + offs_n, mask=in_list, other=-1).to(tl.int64)
        valid = in_list & (slot >= 0) & (slot < num_slots)
        row = tl.where(valid, slot, 0) * stride_row
        vm = valid[:, None]
        k_own = tl.load(kv + row[:, None] + own + tl.arange(0, DVP)[None, :], mask=vm, other=0.0)
        s = tl.dot(q_own, tl.trans(k_own))
        k_o1 = tl.load(kv + row[:, None] + (own + DVP) % 512 + tl.arange(0, DVP)[None, :], mask=vm, other=0.0)
        s += tl.dot(q_o1, tl.trans(k_o1))
        if DV_SPLIT == 4:
            k_o2 = tl.load(kv + row[:, None] + (own + 2 * DVP) % 512 + tl.arange(0, DVP)[None, :], mask=vm, other=0.0)
            s += tl.dot(q_o2, tl.trans(k_o2))
            k_o3 = tl.load(kv + row[:, None] + (own + 3 * DVP) % 512 + tl.arange(0, DVP)[None, :], mask=vm, other=0.0)
            s += tl.dot(q_o3, tl.trans(k_o3))
        k_rope = tl.load(kv + row[:, None] + 512 + tl.arange(0, 64)[None, :], mask=vm, other=0.0)
        s += tl.dot(q_rope, tl.trans(k_rope))
        s = tl.where(valid[None, :], s * score_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_use)
        p = tl.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k_own.dtype), k_own)
        m_i = m_new
    inv = tl.where(l_i > 0.0, 1.0 / tl.where(l_i > 0.0, l_i, 1.0), 0.0)
    cols = own + tl.arange(0, DVP)
    if SPLIT_K:
        prt = (t * num_heads + heads) * num_splits + split
        lse2 = tl.where(l_i > 0.0, m_i + tl.log2(tl.where(l_i > 0.0, l_i, 1.0)), float("-inf"))
        if part == 0:
            tl.store(lse_part + prt, lse2, mask=hmask)
        tl.store(o_part + prt[:, None] * 512 + cols[None, :], acc * inv[:, None], mask=hmask[:, None])
    else:
        tl.store(out + t * stride_ot + heads[:, None] * stride_oh + cols[None, :],
                 (acc * inv[:, None]).to(out.dtype.element_ty), mask=hmask[:, None])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--rows", default="128x128,32x128,1x128,64x128,128x64,64x64")
    args = ap.parse_args()
    import sparsemla
    from sparsemla.gen.render import load_module
    from sparsemla.gen.spec import KernelSpec, config_label
    from sparsemla.bench import FORMATS, SLOTS, TOPK, graph_time_us, make_cache, rotations
    from sparsemla.gen.gpu_measure import rel_err
    from sparsemla.runtime.dispatch import select_config

    dev = torch.device("cuda")
    fmt = FORMATS["bf16"]
    cache, _ = make_cache(fmt, dev)
    variants = [(2, 16, 4, 2), (2, 16, 4, 3), (2, 32, 4, 2), (4, 32, 4, 2), (4, 16, 4, 2)]
    results = []
    for rc in args.rows.split(","):
        T, H = map(int, rc.split("x"))
        spec = KernelSpec(num_heads=H, topk=TOPK, arch="sm90")
        mod = load_module(spec)
        g = torch.Generator(device=dev).manual_seed(T * 1000 + H)
        sets = [(torch.randn(T, H, 576, device=dev, dtype=torch.bfloat16, generator=g),
                 torch.randint(0, SLOTS, (T, TOPK), device=dev, dtype=torch.int32, generator=g),
                 torch.empty(T, H, 512, device=dev, dtype=torch.bfloat16)) for _ in range(rotations(fmt, T))]
        sm = 576 ** -0.5
        q0, i0, _ = sets[0]
        ref = sparsemla.sparse_mla(q0[:4], cache, i0[:4], sm_scale=sm, backend="torch")
        cfg = select_config(spec, T, dev)
        base = graph_time_us([(lambda q=q, i=i, o=o: sparsemla.sparse_mla(q, cache, i, sm_scale=sm, out=o,
                                                                         backend="triton", config=cfg)) for q, i, o in sets])
        print(f"T={T} H={H} shipped {config_label(cfg)}: {base:.1f} us", flush=True)
        results.append(dict(T=T, H=H, variant="shipped " + config_label(cfg), us=base))
        for dvs, bn, w, st in variants:
            for l2p in (0, 2):
                progs1 = T * (H // 64) * dvs
                for splits in (1, 2, 4, 8, 16, 32):
                    if progs1 * splits > 8 * 132 or (splits > 1 and progs1 * splits // 2 >= 4 * 132):
                        continue
                    o_part = torch.empty(T * H * splits, 512, device=dev, dtype=torch.float32)
                    lse_part = torch.empty(T * H * splits, device=dev, dtype=torch.float32)
                    s_p2 = 1 << (splits - 1).bit_length()
                    bdv = max(16, min(512, 8192 // s_p2))

                    def call(q, i, o):
                        def f():
                            dvsplit_fwd[(T * (H // 64) * splits * dvs,)](
                                q, q.stride(0), q.stride(1), cache, cache.stride(0), cache.shape[0], i, i.stride(0),
                                o, o.stride(0), o.stride(1), o_part, lse_part, sm, H, splits,
                                BLOCK_H=64, BLOCK_N=bn, TOPK=TOPK, DV_SPLIT=dvs, L2P=l2p, SPLIT_K=splits > 1,
                                num_warps=w, num_stages=st)
                            if splits > 1:
                                mod.sparse_mla_combine[(T * H, 512 // bdv)](
                                    o_part, lse_part, None, o, o.stride(0), o.stride(1), o.stride(2), None, 0, 0, H,
                                    NUM_SPLITS=splits, SPLITS_P2=s_p2, BLOCK_DV=bdv, num_warps=4)
                        return f
                    name = f"dv{dvs} n{bn} w{w} st{st} s{splits} l2p{l2p}"
                    try:
                        q, i, o = sets[0]
                        call(q, i, o)()
                        torch.cuda.synchronize()
                        err = rel_err(o[:4], ref)
                        us = graph_time_us([call(*st_) for st_ in sets])
                        print(f"T={T} H={H} {name}: {us:.1f} us ({base / us:.2f}x shipped) err {err:.1e}", flush=True)
                        results.append(dict(T=T, H=H, variant=name, us=us, rel_err=err, speedup=base / us))
                    except Exception as e:
                        print(f"T={T} H={H} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        with open(f"{args.out}/proto_dvsplit.json", "w") as f:
            json.dump(results, f, indent=1)
    print("\n| T | H | shipped us | best variant | us | speedup |")
    print("|---|---|---|---|---|---|")
    for T, H in sorted({(r["T"], r["H"]) for r in results}):
        rs = [r for r in results if (r["T"], r["H"]) == (T, H)]
        b = rs[0]
        best = min(rs[1:], key=lambda r: r["us"], default=None)
        if best:
            print(f"| {T} | {H} | {b['us']:.1f} | {best['variant']} | {best['us']:.1f} | {b['us'] / best['us']:.2f} |")


if __name__ == "__main__":
    main()
