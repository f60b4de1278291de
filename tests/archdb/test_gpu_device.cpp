// GPU checks of archdb on the device at hand (compiled as CUDA when PK_ENABLE_CUDA; otherwise every
// test skips with a message):
//  - detection resolves the GPU to its database entry (not a synthesized one), and the entry's numbers
//    agree with cudaGetDeviceProperties;
//  - archdb's occupancy model gives the blocks per SM of cudaOccupancyMaxActiveBlocksPerMultiprocessor
//    for compiled kernels that bind on each limit (warps, registers, static and dynamic shared memory,
//    the block cap), with the registers and static shared memory the compiler gave them
//    (cudaFuncGetAttributes).
#include <pk/archdb/device.hpp>
#include <pk/archdb/occupancy.hpp>
#include <pk/config.hpp>
#include <pk/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#if PK_ENABLE_CUDA && defined(__CUDACC__)
#include <pk/backend/cuda/device.hpp>

#include <cuda_runtime.h>

namespace pk_test_gpu {

// Static shared memory of StaticBytes; the loop keeps every byte live.
template <int Threads, int StaticBytes>
__global__ void __launch_bounds__(Threads) smem_kernel(float* out) {
  __shared__ float buf[StaticBytes / 4];
  for (int i = threadIdx.x; i < StaticBytes / 4; i += Threads) buf[i] = static_cast<float>(i);
  __syncthreads();
  out[blockIdx.x * Threads + threadIdx.x] = buf[(threadIdx.x * 7) % (StaticBytes / 4)];
}

// Dynamic shared memory only.
template <int Threads>
__global__ void __launch_bounds__(Threads) dynamic_kernel(float* out, int words) {
  extern __shared__ float dyn[];
  for (int i = threadIdx.x; i < words; i += Threads) dyn[i] = static_cast<float>(i);
  __syncthreads();
  out[blockIdx.x * Threads + threadIdx.x] = dyn[(threadIdx.x * 13) % words];
}

// Register pressure: N independent accumulators stay live across the loop.
template <int Threads, int N>
__global__ void __launch_bounds__(Threads) regs_kernel(const float* in, float* out, int iters) {
  float acc[N];
#pragma unroll
  for (int k = 0; k < N; ++k) acc[k] = in[k * Threads + threadIdx.x];
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = acc[k] * acc[(k + 1) % N] + in[(k + it) % N];
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) s += acc[k];
  out[blockIdx.x * Threads + threadIdx.x] = s;
}

}  // namespace pk_test_gpu

namespace {

struct case_t {
  std::string name;
  const void* fn;
  int threads;
  std::int64_t dynamic_smem;
};

bool have_gpu() { return pk::cuda_device_count() > 0; }

TEST(ArchdbGpu, DetectionFindsDatabaseEntry) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU archdb checks skipped";
  pk::stream s;
  ASSERT_TRUE(pk::default_stream(s));
  ASSERT_EQ(s.backend(), pk::backend_kind::cuda) << s.describe();
  pk::archdb::device_query q;
  ASSERT_TRUE(pk::backend::cuda::query(0, q));
  std::cout << "device query: '" << q.name << "' cc " << q.cc_major << "." << q.cc_minor << ", " << q.sm_count
            << " SMs -> " << s.device().name << "\n";
  EXPECT_FALSE(s.device().synthesized) << q.name << " has no database entry (archdb/devices/*.json)";
  if (q.name.find("H200") != std::string::npos) EXPECT_EQ(s.device().name, "H200 SXM");
  EXPECT_EQ(s.device().isa, pk::archdb::arch_of(q));
}

TEST(ArchdbGpu, TableAndQueryAgree) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU archdb checks skipped";
  pk::stream s;
  ASSERT_TRUE(pk::default_stream(s));
  pk::archdb::device_query q;
  ASSERT_TRUE(pk::backend::cuda::query(0, q));
  // The database entry as written (resolve_device overrides it with the query; find_device does not).
  const pk::archdb::device_desc* db = pk::archdb::find_device(s.device().name);
  ASSERT_NE(db, nullptr);
  ASSERT_FALSE(db->synthesized);
  const auto src = [&](const char* f) {
    const auto it = db->sources.find(f);
    return std::string(f) + " (database source: " + (it == db->sources.end() ? "?" : it->second) + ")";
  };
  EXPECT_EQ(db->sm_count, q.sm_count) << src("sm_count");
  EXPECT_EQ(db->warp_size, q.warp_size) << src("warp_size");
  EXPECT_EQ(db->max_threads_per_sm, q.max_threads_per_sm) << src("max_threads_per_sm");
  EXPECT_EQ(db->max_threads_per_block, q.max_threads_per_block) << src("max_threads_per_block");
  EXPECT_EQ(db->max_blocks_per_sm, q.max_blocks_per_sm) << src("max_blocks_per_sm");
  EXPECT_EQ(db->regs_per_sm, q.regs_per_sm) << src("regs_per_sm");
  EXPECT_EQ(db->regs_per_block, q.regs_per_block) << src("regs_per_block");
  EXPECT_EQ(db->smem_per_sm, q.smem_per_sm) << src("smem_per_sm");
  EXPECT_EQ(db->smem_per_block, q.smem_per_block) << src("smem_static_limit");
  EXPECT_EQ(db->smem_per_block_optin, q.smem_per_block_optin) << src("smem_per_block_optin");
  EXPECT_EQ(db->smem_reserved_per_block, q.smem_reserved_per_block) << src("smem_reserved_per_block");
  EXPECT_EQ(db->l2_bytes, q.l2_bytes) << src("l2_bytes");
  EXPECT_EQ(db->cc_major, q.cc_major) << src("cc_major");
  EXPECT_EQ(db->cc_minor, q.cc_minor) << src("cc_minor");
}

TEST(ArchdbGpu, OccupancyMatchesCuda) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device: GPU archdb checks skipped";
  pk::stream s;
  ASSERT_TRUE(pk::default_stream(s));
  namespace g = pk_test_gpu;
  const std::vector<case_t> cases = {
      {"warps: 1024 threads", reinterpret_cast<const void*>(&g::smem_kernel<1024, 1024>), 1024, 0},
      {"block cap: 32 threads", reinterpret_cast<const void*>(&g::smem_kernel<32, 128>), 32, 0},
      {"static smem 40 KiB", reinterpret_cast<const void*>(&g::smem_kernel<256, 40960>), 256, 0},
      {"static smem 12 KiB", reinterpret_cast<const void*>(&g::smem_kernel<128, 12288>), 128, 0},
      {"dynamic smem 100 KiB", reinterpret_cast<const void*>(&g::dynamic_kernel<256>), 256, 100 * 1024},
      {"dynamic smem 70 KiB", reinterpret_cast<const void*>(&g::dynamic_kernel<128>), 128, 70 * 1024},
      {"dynamic smem 20000 B", reinterpret_cast<const void*>(&g::dynamic_kernel<128>), 128, 20000},
      {"registers: 48 accumulators", reinterpret_cast<const void*>(&g::regs_kernel<256, 48>), 256, 0},
      {"registers: 96 accumulators", reinterpret_cast<const void*>(&g::regs_kernel<128, 96>), 128, 0},
      {"registers: 1024 threads", reinterpret_cast<const void*>(&g::regs_kernel<1024, 24>), 1024, 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    cudaFuncAttributes attr{};
    ASSERT_EQ(cudaFuncGetAttributes(&attr, c.fn), cudaSuccess);
    if (c.dynamic_smem > 0)
      ASSERT_EQ(cudaFuncSetAttribute(c.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(c.dynamic_smem)),
                cudaSuccess);
    int cuda_blocks = -1;
    ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&cuda_blocks, c.fn, c.threads,
                                                            static_cast<std::size_t>(c.dynamic_smem)),
              cudaSuccess);
    pk::archdb::kernel_resources k;
    k.threads_per_block = c.threads;
    k.regs_per_thread = attr.numRegs;
    k.static_smem = static_cast<std::int64_t>(attr.sharedSizeBytes);
    k.dynamic_smem = c.dynamic_smem;
    const auto r = pk::archdb::occupancy(s.device(), k);
    std::cout << c.name << ": " << attr.numRegs << " regs, " << attr.sharedSizeBytes << " B static + " << c.dynamic_smem
              << " B dynamic: cuda " << cuda_blocks << " blocks/SM, archdb " << r.blocks_per_sm << " (" << r.limiter
              << ")\n";
    EXPECT_EQ(r.blocks_per_sm, cuda_blocks) << r.detail;
  }
}

}  // namespace

#else

TEST(ArchdbGpu, Skipped) { GTEST_SKIP() << "built without CUDA (PK_ENABLE_CUDA=OFF): GPU archdb checks skipped"; }

#endif
