"""Issue 7 probe (session 22, CPU only): do the Gluon pieces of the attention kernel compile for thread-block
clusters on Triton 3.6? A warp-specialized kernel (a loading partition filling two shared buffers by cp.async
and arriving on an mbarrier, the default partition running a 64 x 64 x 64 wgmma from them and storing the
result), every layout with CTA bases of 0 (each CTA holds the whole tensor), compiled for sm_90a with
num_ctas = 1, 2 and 16 (no GPU needed). Prints, per N, whether it compiled, its wgmma and cp.async counts,
and the PTX's global stores: with N > 1 they are predicated on the CTA's rank (only rank 0 stores), the
rest of the kernel runs in every CTA (benchmarks/calls/cluster_probe.py ran such a kernel on the H200).
--sliced: the cp.async goes into a 64-column slice of a wider buffer (memdesc slice), as the template's Q
load and gather do: Triton 3.6 refuses that with CTA layouts ("non-trivial block dimension not supported"),
3.9 compiles it.
  python benchmarks/calls/cluster_compile_probe.py [--sliced]   (with Triton 3.6, e.g. /work/venv36)
"""
import os

os.environ["TRITON_INTERPRET"] = "0"

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon._runtime import GluonASTSource  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (async_copy, fence_async_shared, mbarrier,  # noqa: E402
                                                              warpgroup_mma, warpgroup_mma_wait)

_cp_async = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared


@gluon.jit
def _consumer(a_s, b_s, bars, out, BL: gl.constexpr, ACC: gl.constexpr):
    mbarrier.wait(bars.index(0), 0)
    fence_async_shared()
    acc = warpgroup_mma(a_s, b_s.permute((1, 0)), gl.zeros([64, 64], gl.float32, ACC), use_acc=False, is_async=True)
    acc = warpgroup_mma_wait(0, deps=[acc])
    rows = gl.arange(0, 64, layout=gl.SliceLayout(1, ACC))
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, ACC))
    gl.store(out + rows[:, None] * 64 + cols[None, :], acc)


@gluon.jit
def _loader(a, a_s, b_s, bars, BL: gl.constexpr, ACC: gl.constexpr):
    rows = gl.arange(0, 64, layout=gl.SliceLayout(1, BL))
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, BL))
    _cp_async(a_s, a + rows[:, None] * 64 + cols[None, :])
    _cp_async(b_s, a + rows[:, None] * 64 + cols[None, :])
    async_copy.mbarrier_arrive(bars.index(0), increment_count=False)


@gluon.jit
def _probe(a, out, BL: gl.constexpr, ACC: gl.constexpr, SW: gl.constexpr, MB: gl.constexpr, SLICED: gl.constexpr):
    if SLICED:
        a_s = gl.allocate_shared_memory(gl.bfloat16, [64, 128], SW).slice(64, 64, dim=1)
    else:
        a_s = gl.allocate_shared_memory(gl.bfloat16, [64, 64], SW)
    b_s = gl.allocate_shared_memory(gl.bfloat16, [64, 64], SW)
    bars = gl.allocate_shared_memory(gl.int64, [1, 1], MB)
    mbarrier.init(bars.index(0), count=128)
    gl.warp_specialize([(_consumer, (a_s, b_s, bars, out, BL, ACC)), (_loader, (a, a_s, b_s, bars, BL, ACC))],
                       [4], [96])


def main():
    import sys
    sliced = "--sliced" in sys.argv[1:]
    for ctas in (1, 2, 16):
        bits = ctas.bit_length() - 1
        cga2, cga1 = [[0, 0]] * bits, [[0]] * bits  # CTA bases of 0: every CTA holds the whole tensor
        layouts = dict(
            BL=gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0], cga2),
            ACC=gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 16],
                                          cga_layout=cga2),
            SW=gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2, cga_layout=cga2),
            MB=mbarrier.MBarrierLayout(cga_layout=cga1), SLICED=sliced)
        aligned = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
        try:
            k = triton.compile(GluonASTSource(_probe, {"a": "*bf16", "out": "*fp32"}, layouts, aligned),
                               target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_ctas": ctas})
        except Exception as e:  # noqa: BLE001 (a probe: report whatever fails)
            print(f"num_ctas={ctas}{' (sliced)' if sliced else ''}: failed: {type(e).__name__}: {str(e)[-300:]}")
            continue
        ptx = k.asm["ptx"]
        stores = [line.strip() for line in ptx.splitlines() if "st.global" in line]
        print(f"num_ctas={ctas}{' (sliced)' if sliced else ''}: compiled; wgmma {ptx.count('wgmma.mma_async')}, cp.async {ptx.count('cp.async.')}, "
              f"%cluster_ctarank read {ptx.count('%cluster_ctarank')}x; {len(stores)} global stores, "
              f"predicated: {all(s.startswith('@') for s in stores)}")


if __name__ == "__main__":
    main()
