"""Issue 7 probe (session 39): does other warps' shared-memory traffic slow an S^T chain of wgmmas as much as the
fp8 T=256 H=16 profiles show?

Session 27's profile had fp8_e4m3's S^T at ~2700-2900 cycles a tile and model1's at ~840, in kernels whose S^T is
the same 36 wgmmas (m64n16k16, K from a 128-byte-swizzled stage of 64 rows x 576 bf16, Q's 16 heads as N). Session
39's pairs kernel, whose computing groups took turns on the tensor cores, did not shorten it, so the tensor cores
are not what the programs contend for. A candidate is shared memory's bandwidth: fp8_e4m3's group C writes its bf16
stage at twice model1's rate. This probe times that chain in one CTA an SM (CUDA C++, built on the GPU machine by
torch.utils.cpp_extension.load_inline with nvcc for sm_90a), with:
- nothing else running ("alone");
- two more warp groups storing 16 bytes a thread into 64 KB of shared memory, as fast as they can or with a pause
  of GAP cycles after each 4 KB ("stores", as group C writes its stage);
- the same, each store after a 4-byte load ("loads+stores");
- a second warp group running the same chain at the same time ("two chains": tensor cores and operand reads shared).
It also times an fp8 S^T chain (DEVELOPERS.md): 18 wgmmas m64n32k32 on e4m3 operands, K's 576 bytes a row read
once and Q's two e4m3 halves as 32 columns of N. It prints the chain's cycles (median over the CTAs of the mean over
ITERS chains) and the bytes a cycle the other groups moved. The operands' values do not matter to the timing
(shared memory is not initialized).
  python3 benchmarks/calls/smem_contention_probe.py [--iters 200]   (on the GPU)
  python3 benchmarks/calls/smem_contention_probe.py --compile   (no GPU: nvcc for sm_90a, the kernel, then with torch)
"""
import argparse
import sys

# (name, MODE, GAP cycles): MODE 0 alone, 1 stores, 2 loads+stores, 3 two chains
CASES = [("alone", 0, 0), ("stores", 1, 0), ("stores", 1, 100), ("stores", 1, 300), ("stores", 1, 1000),
         ("loads+stores", 2, 0), ("loads+stores", 2, 300), ("two chains", 3, 0)]
CASES_FP8 = [("alone", 0, 0), ("stores", 1, 0), ("stores", 1, 300), ("loads+stores", 2, 300), ("two chains", 3, 0)]

KERNEL = r"""
#include <cstdint>
#include <cuda_runtime.h>
namespace probe {

constexpr int NT = 384;          // three warp groups
constexpr int K_CHUNK = 8192;    // 64 rows x 128 bytes (64 bf16 columns), 128-byte swizzle
constexpr int Q_CHUNK = 4096;    // 16 rows x 128 bytes (bf16), or 32 (fp8: Q's two e4m3 halves as N)
constexpr int CHUNKS = 9;        // 576 bf16 columns (fp8: 576 e4m3 columns are 4.5 chunks)
constexpr int TRAFFIC = 65536;   // the other groups' shared-memory region
constexpr int SMEM = CHUNKS * (K_CHUNK + Q_CHUNK) + TRAFFIC;

__device__ __forceinline__ uint64_t desc(const char* p) {  // K-major, 128-byte swizzle, 8-row groups 1 KB apart
  const uint64_t addr = (uint64_t)__cvta_generic_to_shared(p);
  return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void mma(float (&d)[8], uint64_t a, uint64_t b, int acc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, "
               "1, 1, 0, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "l"(a), "l"(b), "r"(acc));
}

__device__ __forceinline__ void mma_fp8(float (&d)[16], uint64_t a, uint64_t b, int acc) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
               "%11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b), "r"(acc));
}

// S^T's chain ITERS times: bf16, 36 wgmmas m64n16k16 over 9 chunks of 64 columns, 4 k-steps each; or FP8, 18
// wgmmas m64n32k32 over 576 e4m3 columns (Q's two e4m3 halves as 32 columns of N: K read once, at half the bytes).
// The other warp groups move bytes until the first chain group is done (MODE 1, 2) or run the chain too (MODE 3).
template <int MODE, bool FP8>
__global__ void __launch_bounds__(NT) contend(long long* __restrict__ out, int iters, int gap) {
  extern __shared__ __align__(1024) char smem[];
  __shared__ volatile int stop;
  __shared__ unsigned long long rounds;
  const char* k = smem;
  const char* q = smem + CHUNKS * K_CHUNK;
  int4* traffic = (int4*)(smem + CHUNKS * (K_CHUNK + Q_CHUNK));
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) { stop = 0; rounds = 0; }
  __syncthreads();
  if (wg == 0 || (MODE == 3 && wg == 1)) {
    float d[16] = {};
    const long long t0 = clock64();
    for (int it = 0; it < iters; ++it) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
      for (int s = 0; s < (FP8 ? 18 : CHUNKS * 4); ++s) {  // (a k-step is 32 bytes of a row either way)
        const uint64_t a = desc(k + (s / 4) * K_CHUNK + (s % 4) * 32), b = desc(q + (s / 4) * Q_CHUNK + (s % 4) * 32);
        if constexpr (FP8) mma_fp8(d, a, b, s > 0);
        else mma(reinterpret_cast<float (&)[8]>(d), a, b, s > 0);
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    const long long t1 = clock64();
    if (threadIdx.x % 128 == 0) out[blockIdx.x * 4 + wg] = (t1 - t0) / iters;
    if (threadIdx.x == 0) { out[blockIdx.x * 4 + 2] = t1 - t0; stop = 1; }
    if (d[0] == 1.2345f) out[blockIdx.x * 4 + 3] = 0;  // (keeps the accumulators alive)
  } else if (MODE == 1 || MODE == 2) {
    int4 v = make_int4(threadIdx.x, 1, 2, 3);
    unsigned long long mine = 0;
    while (!stop) {
      for (int i = threadIdx.x - 128; i < TRAFFIC / 16; i += NT - 128) {
        const unsigned at = (unsigned)__cvta_generic_to_shared(traffic + i);
        if (MODE == 2) {  // (asm volatile: the compiler must not drop or merge these)
          int x;
          asm volatile("ld.shared.b32 %0, [%1];" : "=r"(x) : "r"(at ^ 16u));
          v.x += x;
        }
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(at), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                     : "memory");
      }
      ++mine;
      if (gap) { const long long g0 = clock64(); while (clock64() - g0 < gap) {} }
    }
    if (threadIdx.x == 128) rounds = mine;  // (each thread did the same rounds, give or take one)
  }
  __syncthreads();
  if (threadIdx.x == 0 && MODE != 3) out[blockIdx.x * 4 + 3] = (long long)rounds * TRAFFIC * (MODE == 2 ? 2 : 1);
}

}  // namespace probe
"""

HOST = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

template <int MODE, bool FP8>
void launch_m(torch::Tensor out, int64_t iters, int64_t gap) {
  auto fn = probe::contend<MODE, FP8>;
  cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, probe::SMEM);
  fn<<<(unsigned)out.size(0), probe::NT, probe::SMEM, c10::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<long long*>(out.data_ptr<int64_t>()), (int)iters, (int)gap);
}

void launch(torch::Tensor out, int64_t mode, int64_t fp8, int64_t iters, int64_t gap) {
  TORCH_CHECK(out.dim() == 2 && out.size(1) == 4 && out.scalar_type() == torch::kInt64 && out.is_contiguous(),
              "out: expected a contiguous int64 tensor [CTAs, 4]");
  switch (mode * 2 + (fp8 ? 1 : 0)) {
    case 0: launch_m<0, false>(out, iters, gap); break;
    case 1: launch_m<0, true>(out, iters, gap); break;
    case 2: launch_m<1, false>(out, iters, gap); break;
    case 3: launch_m<1, true>(out, iters, gap); break;
    case 4: launch_m<2, false>(out, iters, gap); break;
    case 5: launch_m<2, true>(out, iters, gap); break;
    case 6: launch_m<3, false>(out, iters, gap); break;
    case 7: launch_m<3, true>(out, iters, gap); break;
    default: TORCH_CHECK(false, "mode ", mode, ": expected 0 (alone), 1 (stores), 2 (loads+stores), 3 (two chains)");
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""


def compile_only() -> int:
    """nvcc for sm_90a on the kernel alone (every mode), then on the whole source with torch's headers
    (nvcc_check.build)."""
    from nvcc_check import build
    inst = "".join(f"template __global__ void probe::contend<{m}, {f}>(long long*, int, int);\n" for m in range(4)
                   for f in ("false", "true"))
    return build(KERNEL, inst, HOST)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true", help="nvcc the kernel for sm_90a (no GPU)")
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    if args.compile:
        return compile_only()
    import torch
    from torch.utils.cpp_extension import load_inline

    ext = load_inline("smem_contention_probe", cpp_sources="void launch(torch::Tensor out, int64_t mode, "
                      "int64_t fp8, int64_t iters, int64_t gap);", cuda_sources=KERNEL + HOST, functions=["launch"],
                      extra_cuda_cflags=["-gencode=arch=compute_90a,code=sm_90a", "-O3"], verbose=False)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    lines = ["| chain | case | gap (cycles) | S^T chain (cycles, median) | p90 | other groups' bytes a cycle |",
             "|---|---|---|---|---|---|"]
    for fp8, (name, mode, gap) in [(0, c) for c in CASES] + [(1, c) for c in CASES_FP8]:
        out = torch.zeros(sms, 4, dtype=torch.int64, device="cuda")
        ext.launch(out, mode, fp8, 10, gap)  # (warm-up)
        ext.launch(out, mode, fp8, args.iters, gap)
        torch.cuda.synchronize()
        d = out.double()
        chain = (torch.cat([d[:, 0], d[:, 1]]) if mode == 3 else d[:, 0])
        rate = "" if mode in (0, 3) else f"{(d[:, 3] / d[:, 2]).median().item():.1f}"
        line = (f"| {'fp8 n32k32' if fp8 else 'bf16 n16k16'} | {name} | {gap} | {chain.median().item():.0f} | "
                f"{chain.quantile(0.9).item():.0f} | {rate} |")
        print(line, flush=True)
        lines.append(line)
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
