"""Issue 7 probe (session 22): can a Gluon kernel on Triton 3.6 (the H200's) run as thread-block clusters, the
way a split-K merge through a cluster would need (DEVELOPERS.md: bf16 T=1 H=128 is 7.4 us without its merge,
10.1 with the combine kernel)?

Triton launches a kernel compiled with num_ctas = N > 1 as clusters of N CTAs along x (up to 16, non-portable
above 8), program_id being the cluster's id. Gluon then wants every layout to say how the N CTAs share it
(cga_layout); a layout whose CTA bases are all 0 has each CTA hold the whole tensor, and Triton lets only
CTA rank 0 store it (the compiled PTX predicates the st.global on %cluster_ctarank == 0). So a kernel whose
CTAs each do their own split would compute as now (loads, shared memory, wgmma are per CTA) and write its
results by inline-asm stores. This probe checks on the GPU, for N = 2, 8 and 16: that every CTA runs (its
rank through inline asm, %cluster_ctarank, and the cluster's id through program_id), that inline-asm stores
from every CTA land, and how many cycles a cluster barrier (barrier.cluster arrive.release + wait.acquire)
takes, timed by clock64 over 64 barriers.
Run on the GPU after `pip install .`: python3 benchmarks/calls/cluster_probe.py
"""
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

BARRIERS = gl.constexpr(64)


@gluon.jit
def _probe(out, cycles, N: gl.constexpr, L: gl.constexpr):
    offs = gl.arange(0, N, layout=L)
    zero = offs * 0
    rank = gl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r,r", [zero], dtype=gl.int32,
                                     is_pure=True, pack=1)
    cluster = gl.program_id(0)
    t0 = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [zero], dtype=gl.int64, is_pure=False, pack=1)
    for _ in range(BARRIERS):
        zero = gl.inline_asm_elementwise(
            "barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned; mov.u32 $0, 0;",
            "=r,r", [zero], dtype=gl.int32, is_pure=False, pack=1)
    t1 = gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [zero], dtype=gl.int64, is_pure=False, pack=1)
    row = cluster * gl.num_ctas() + rank
    # every CTA's own row, by an inline-asm store (Triton's would store from rank 0 only)
    gl.inline_asm_elementwise("st.global.b32 [$1], $2; mov.u32 $0, 0;", "=r,l,r",
                              [out + row * N + offs, rank * 1000 + cluster], dtype=gl.int32, is_pure=False,
                              pack=1)
    gl.inline_asm_elementwise("st.global.b64 [$1], $2; mov.u32 $0, 0;", "=r,l,l",
                              [cycles + row + zero, (t1 - t0) // BARRIERS], dtype=gl.int32, is_pure=False,
                              pack=1)


def main():
    dev = torch.device("cuda")
    n = 128
    for ctas in (2, 8, 16):
        clusters = 132 // ctas
        bits = ctas.bit_length() - 1
        layout = gl.BlockedLayout([1], [32], [4], [0], [[0]] * bits)
        out = torch.full((clusters * ctas, n), -1, dtype=torch.int32, device=dev)
        cycles = torch.zeros(clusters * ctas, dtype=torch.int64, device=dev)
        try:
            _probe[(clusters,)](out, cycles, n, layout, num_warps=4, num_ctas=ctas)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 (a probe: report whatever fails)
            print(f"num_ctas={ctas}: launch failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        want = torch.tensor([[r * 1000 + c] * n for c in range(clusters) for r in range(ctas)], dtype=torch.int32)
        ok = torch.equal(out.cpu(), want)
        cyc = cycles.cpu().double()
        print(f"num_ctas={ctas}: {clusters} clusters, every CTA's row {'as expected' if ok else 'WRONG'}; "
              f"cycles per cluster barrier: median {cyc.median().item():.0f}, max {cyc.max().item():.0f}", flush=True)
        if not ok:
            print(out[:ctas * 2, :2].cpu())


if __name__ == "__main__":
    main()
