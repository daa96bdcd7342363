"""Issue 7 probe (session 37): would the head blocks of a T=1 split land their tiles sooner if they shared the
gathered rows through a thread-block cluster?

At bf16 T=1 H=128 the narrow kernel's 8 head blocks of a split each gather the same 128 rows, so two tiles a program
are 18.9 MB through L2 for 2.4 MB of distinct rows, and they land ~6.7K cycles into the program (gather_probe.py,
session 37 calls 2 and 4): the gather's trip through L2 bounds the row. This probe is CUDA C++ (built on the GPU
machine by torch.utils.cpp_extension.load_inline with nvcc for sm_90a). It launches 128 CTAs, 8 of which share each
split's rows, in clusters of C (1, 2, 4 or 8) CTAs:
- each CTA of a cluster gathers its 64 / C rows of each tile by 16-byte cp.async into its own shared memory, laid out
  as the kernel's stages are, in 64-column chunks (rows of 128 bytes, one chunk after another);
- then it copies its rows of each chunk into every other CTA of the cluster, at the same offsets, by
  cp.async.bulk.shared::cluster (one copy per chunk, tile and peer; the bytes complete on the peer's mbarrier);
- then it waits on its own mbarrier for the rest.
With C = 1 every CTA gathers every row itself, as the kernel does now. The multicast modes (session 39: call 2
found the gather bound by the L2 as a whole) instead load each CTA's 64 / C rows by bulk copies from global memory
multicast to every CTA of the cluster (cp.async.bulk...multicast::cluster), 128 bytes a copy into the same layout
("multicast") or a whole row a copy into rows laid end to end ("multicast-rows"); each CTA waits for all 64 rows on
its own mbarrier. Each CTA stamps clock64 at its start, when its own rows have landed (multicast: when its copies
are issued), and when all rows are in. The kernel time is the median of CUDA-graph replays over 64
rotating index sets (rows out of L2): gen.gpu_measure's time_calls (in session 37's calls a replay held one pass over
the sets). Every CTA writes 16 bytes of every row back, and these are checked against the cache.
  python3 benchmarks/calls/cluster_share_probe.py [--modes share,multicast,multicast-rows]   (on the GPU)
  python3 benchmarks/calls/cluster_share_probe.py --compile   (no GPU: nvcc for sm_90a, the kernel, then with torch)
"""
import argparse
import sys

PROGRAMS = 128
SHARE = 8  # programs sharing a split's rows (T=1 H=128: 8 head blocks of 16)
ROW_BYTES = 1152  # bf16, d_qk 576
CLUSTERS = (1, 2, 4, 8)
MODES = {"share": 0, "multicast": 1, "multicast-rows": 2}  # the kernel's MODE

KERNEL = r"""
#include <cooperative_groups.h>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;
namespace probe {  // (the host build includes torch, whose namespaces must not meet the kernel's names)

constexpr int ROWB = 1152;   // bytes a row
constexpr int CHUNKS = 9;    // 128-byte chunks a row (64 bf16 columns)
constexpr int NT = 256;      // threads a CTA

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ unsigned peer_addr(unsigned addr, unsigned rank) {
  unsigned out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}

// Where 16 bytes of row r of tile t, chunk c (128 bytes, 64 bf16 columns) lie in a CTA's shared memory: the stage
// layout ([tile][chunk][64 rows][128 bytes]), or whole rows one after another (ROWS, whole-row copies).
template <bool ROWS>
__device__ __forceinline__ int row_at(int t, int r, int c) {
  return ROWS ? (t * 64 + r) * ROWB + c * 128 : ((t * CHUNKS + c) * 64 + r) * 128;
}

// MODE 0: each CTA gathers its 64 / C rows by cp.async and copies them into its peers (cp.async.bulk
// .shared::cluster); MODE 1: each CTA loads its rows by bulk copies from global memory multicast to every CTA of the
// cluster, 128 bytes a copy into the stage layout; MODE 2: the same, a whole row (1152 bytes) a copy.
template <int C, int TILES, int MODE>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(NT)
cluster_share(const char* __restrict__ kv, const int* __restrict__ idx, long long* __restrict__ prof,
              int4* __restrict__ first, int share) {
  extern __shared__ __align__(1024) char smem[];
  __shared__ __align__(8) unsigned long long bar;
  constexpr bool ROWS = MODE == 2;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const int pid = blockIdx.x, tid = threadIdx.x, split = pid / share;
  const long long t0 = clock64();
  constexpr int RPC = 64 / C;  // rows this CTA gathers, of each tile
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&bar)));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  cluster.sync();  // every CTA's barrier is initialized before a peer's copies complete on it
  if ((C > 1 || MODE > 0) && tid == 0) {  // the bytes the peers (MODE 0) or all copies (MODE 1, 2) bring in
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(smem_addr(&bar)), "r"(TILES * (MODE == 0 ? 64 - RPC : 64) * ROWB));
  }
  __shared__ int slots[TILES * 64];  // this CTA's rows' slot ids, loaded once (not once per 16-byte piece)
  for (int q = tid; q < TILES * RPC; q += NT) {
    const int t = q / RPC, r = rank * RPC + q % RPC;
    slots[t * 64 + r] = idx[(split * TILES + t) * 64 + r];
  }
  __syncthreads();
  long long t_own;
  if (MODE > 0) {
    constexpr int PER_ROW = ROWS ? 1 : CHUNKS, BYTES = ROWB / PER_ROW;
    const unsigned short mask = (unsigned short)((1u << C) - 1);
    for (int p = tid; p < TILES * RPC * PER_ROW; p += NT) {
      const int rr = p / PER_ROW, c = p % PER_ROW, t = rr / RPC, r = rank * RPC + rr % RPC;
      const char* src = kv + (long long)slots[t * 64 + r] * ROWB + c * BYTES;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                   "[%0], [%1], %2, [%3], %4;"
                   :: "r"(smem_addr(smem + row_at<ROWS>(t, r, c))), "l"(src), "r"(BYTES), "r"(smem_addr(&bar)),
                      "h"(mask) : "memory");
    }
    t_own = clock64();  // (here: when this thread's copies are issued)
  } else {
    for (int p = tid; p < TILES * RPC * 72; p += NT) {  // 72 pieces of 16 bytes a row
      const int rr = p / 72, piece = p % 72, t = rr / RPC, r = rank * RPC + rr % RPC;
      const char* src = kv + (long long)slots[t * 64 + r] * ROWB + piece * 16;
      char* dst = smem + row_at<ROWS>(t, r, piece / 8) + (piece % 8) * 16;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst)), "l"(src));
    }
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_all;");
    __syncthreads();
    t_own = clock64();
  }
  if (MODE == 0 && C > 1) {
    // the cp.async writes (generic proxy), before the bulk copies (async proxy) read them
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    if (tid < (C - 1) * TILES * CHUNKS) {
      const int k = tid % (TILES * CHUNKS);  // tile * CHUNKS + chunk
      const unsigned peer = (rank + 1 + tid / (TILES * CHUNKS)) % C;
      const unsigned src = smem_addr(smem + (k * 64 + rank * RPC) * 128);
      asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   :: "r"(peer_addr(src, peer)), "r"(src), "r"(RPC * 128), "r"(peer_addr(smem_addr(&bar), peer))
                   : "memory");
    }
  }
  if (C > 1 || MODE > 0) {
    unsigned done = 0;
    while (!done) {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(smem_addr(&bar)) : "memory");
    }
  }
  const long long t_all = clock64();
  // 16 bytes of every row back (the check): row r of tile t, its chunk r % 9
  for (int q = tid; q < TILES * 64; q += NT) {
    const int t = q / 64, r = q % 64, c = r % CHUNKS;
    first[(long long)pid * TILES * 64 + q] = *(const int4*)(smem + row_at<ROWS>(t, r, c));
  }
  cluster.sync();  // no CTA leaves while a peer still copies into it
  if (tid == 0) {
    prof[pid * 3 + 0] = 0;
    prof[pid * 3 + 1] = t_own - t0;
    prof[pid * 3 + 2] = t_all - t0;
  }
}
}  // namespace probe
"""

HOST = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

template <int C, int MODE>
void launch_c(torch::Tensor kv, torch::Tensor idx, torch::Tensor prof, torch::Tensor first, int64_t share) {
  constexpr int TILES = 2;
  const int bytes = TILES * probe::CHUNKS * 64 * 128;
  auto fn = probe::cluster_share<C, TILES, MODE>;
  cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (C == 8) cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  fn<<<(unsigned)prof.size(0), probe::NT, bytes, c10::cuda::getCurrentCUDAStream()>>>(
      (const char*)kv.data_ptr(), idx.data_ptr<int>(), reinterpret_cast<long long*>(prof.data_ptr<int64_t>()),
      (int4*)first.data_ptr(), (int)share);
}

template <int MODE>
void launch_m(torch::Tensor kv, torch::Tensor idx, torch::Tensor prof, torch::Tensor first, int64_t share,
              int64_t c) {
  switch (c) {
    case 1: launch_c<1, MODE>(kv, idx, prof, first, share); break;
    case 2: launch_c<2, MODE>(kv, idx, prof, first, share); break;
    case 4: launch_c<4, MODE>(kv, idx, prof, first, share); break;
    case 8: launch_c<8, MODE>(kv, idx, prof, first, share); break;
    default: TORCH_CHECK(false, "cluster size ", c, ": expected 1, 2, 4 or 8");
  }
}

void launch(torch::Tensor kv, torch::Tensor idx, torch::Tensor prof, torch::Tensor first, int64_t share,
            int64_t c, int64_t mode) {
  switch (mode) {
    case 0: launch_m<0>(kv, idx, prof, first, share, c); break;
    case 1: launch_m<1>(kv, idx, prof, first, share, c); break;
    case 2: launch_m<2>(kv, idx, prof, first, share, c); break;
    default: TORCH_CHECK(false, "mode ", mode, ": expected 0 (share), 1 (multicast) or 2 (multicast rows)");
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""


def compile_only() -> int:
    """nvcc for sm_90a on the kernel alone (every cluster size and mode), then on the whole source with torch's
    headers (nvcc_check.build)."""
    from nvcc_check import build
    inst = "".join(f"template __global__ void probe::cluster_share<{c}, 2, {m}>(const char*, const int*, long long*, "
                   f"int4*, int);\n" for c in CLUSTERS for m in MODES.values())
    return build(KERNEL, inst, HOST)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile", action="store_true", help="nvcc the kernel for sm_90a (no GPU)")
    ap.add_argument("--sets", type=int, default=64)
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {list(MODES)}")
    args = ap.parse_args()
    if args.compile:
        return compile_only()
    import torch
    from torch.utils.cpp_extension import load_inline

    from sparsemla.gen.gpu_measure import time_calls
    decl = ("void launch(torch::Tensor kv, torch::Tensor idx, torch::Tensor prof, torch::Tensor first, int64_t share, "
            "int64_t c, int64_t mode);")
    ext = load_inline("cluster_share_probe", cpp_sources=decl, cuda_sources=KERNEL + HOST, functions=["launch"],
                      extra_cuda_cflags=["-gencode=arch=compute_90a,code=sm_90a", "-O3"], verbose=False)
    dev = torch.device("cuda")
    slots = 1 << 20  # 1.2 GB of rows: 64 sets of 2048 rows are 150 MB, out of L2 by the time they come round
    kv = torch.randn(slots, ROW_BYTES // 2, device=dev).to(torch.bfloat16)
    g = torch.Generator(device=dev).manual_seed(0)
    sets = [torch.randint(0, slots, (PROGRAMS // SHARE * 2 * 64,), device=dev, generator=g, dtype=torch.int32)
            for _ in range(args.sets)]
    kv_bytes = kv.view(torch.uint8).view(slots, ROW_BYTES)
    lines = ["| mode | cluster | L2 bytes (MB) | own rows in / issued (cycles) | all rows in (median) | "
             "all rows in (p90) | kernel us | check |", "|---|---|---|---|---|---|---|---|"]
    slot = sets[0].long().view(PROGRAMS // SHARE, 2 * 64)
    rows = torch.arange(2 * 64, device=dev) % 64
    want = torch.stack([kv_bytes[slot[p // SHARE], :].gather(
        1, ((rows % 9) * 128)[:, None] + torch.arange(16, device=dev)[None, :]) for p in range(PROGRAMS)])
    for name in args.modes.split(","):
        mode = MODES[name]
        for c in CLUSTERS:
            prof = torch.zeros(PROGRAMS, 3, dtype=torch.int64, device=dev)
            first = torch.zeros(PROGRAMS * 2 * 64, 16, dtype=torch.uint8, device=dev)
            try:
                ext.launch(kv, sets[0], prof, first, SHARE, c, mode)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 (a probe: report whatever fails)
                print(f"{name} cluster {c}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                return 1  # (a failed launch leaves the context unusable)
            ok = "ok" if torch.equal(first.view(PROGRAMS, 2 * 64, 16), want) else "WRONG"
            for s in sets[1:]:
                ext.launch(kv, s, prof, first, SHARE, c, mode)
            ext.launch(kv, sets[0], prof, first, SHARE, c, mode)  # (its rows last used args.sets - 1 launches ago)
            torch.cuda.synchronize()
            d = prof.double()
            own, all_in, p90 = d[:, 1].median().item(), d[:, 2].median().item(), d[:, 2].quantile(0.9).item()
            us = time_calls([lambda s=s: ext.launch(kv, s, prof, first, SHARE, c, mode) for s in sets])[0]
            l2_mb = PROGRAMS // c * 2 * 64 * ROW_BYTES / 1e6
            line = f"| {name} | {c} | {l2_mb:.1f} | {own:.0f} | {all_in:.0f} | {p90:.0f} | {us:.2f} | {ok} |"
            print(line, flush=True)
            lines.append(line)
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
