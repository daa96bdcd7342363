"""Issue 7 check (session 39, no GPU): does Gluon compile the fp8 S^T that session 39 proposed for the narrow fp8
kernel, for sm_90a? K's 64 rows of 576 e4m3 columns as wgmma's A (512 with a 128-byte swizzle, 64 with a 64-byte
one) and Q's two e4m3 halves, 16 heads each, as the 32 rows of B: m64n32k32, e4m3 x e4m3 into float32. Columns h
and h + 16 of S^T are summed by whoever reads it. Triton 3.6 and 3.9 compile it to 18 wgmmas (16 + 2).
  python3 benchmarks/calls/fp8_st_compile.py"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait


@gluon.jit
def fp8_st(k_ptr, q_ptr, out_ptr):
    SW: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    L: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])
    SW64: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8, rank=2)
    kn = gl.allocate_shared_memory(gl.float8e4nv, [64, 512], SW)
    qn = gl.allocate_shared_memory(gl.float8e4nv, [32, 512], SW)
    kr = gl.allocate_shared_memory(gl.float8e4nv, [64, 64], SW64)
    qr = gl.allocate_shared_memory(gl.float8e4nv, [32, 64], SW64)
    rk = gl.arange(0, 64, layout=gl.SliceLayout(1, L))
    rq = gl.arange(0, 32, layout=gl.SliceLayout(1, L))
    for c in gl.static_range(8):
        cols = c * 64 + gl.arange(0, 64, layout=gl.SliceLayout(0, L))
        kn.slice(c * 64, 64, dim=1).store(gl.load(k_ptr + rk[:, None] * 576 + cols[None, :]))
        qn.slice(c * 64, 64, dim=1).store(gl.load(q_ptr + rq[:, None] * 576 + cols[None, :]))
    cols = 512 + gl.arange(0, 64, layout=gl.SliceLayout(0, L))
    kr.store(gl.load(k_ptr + rk[:, None] * 576 + cols[None, :]))
    qr.store(gl.load(q_ptr + rq[:, None] * 576 + cols[None, :]))
    fence_async_shared()
    S_L: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 32])
    s = gl.zeros([64, 32], gl.float32, layout=S_L)
    s = warpgroup_mma(kn, qn.permute((1, 0)), s, use_acc=False, is_async=True)
    s = warpgroup_mma(kr, qr.permute((1, 0)), s, is_async=True)
    s = warpgroup_mma_wait(0, deps=[s])
    # S^T's columns h and h + 16 (Q's two halves) are summed by the reader: out is [64, 32]
    OL: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    ro = gl.arange(0, 64, layout=gl.SliceLayout(1, OL))
    co = gl.arange(0, 32, layout=gl.SliceLayout(0, OL))
    gl.store(out_ptr + ro[:, None] * 32 + co[None, :], gl.convert_layout(s, OL))


def main() -> None:
    src = GluonASTSource(fn=fp8_st, signature={"k_ptr": "*fp8e4nv", "q_ptr": "*fp8e4nv", "out_ptr": "*fp32"},
                         constexprs={})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    mmas = [line.strip() for line in k.asm["ptx"].splitlines() if "wgmma.mma_async" in line]
    print("wgmma e4m3 lines:", sum("e4m3" in m for m in mmas), mmas[:1])
    print("shared memory:", k.metadata.shared, "bytes")


if __name__ == "__main__":
    main()
