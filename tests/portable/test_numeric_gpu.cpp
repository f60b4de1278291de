// The kernels' 16-bit conversions on the GPU (compiled as CUDA when PK_ENABLE_CUDA; otherwise the test skips
// with a message): pk::bf16(float) and pk::fp16(float) (numeric.hpp: the hardware cvt.rn, NaN bits selected)
// give the same bits as numeric.hpp's portable sequences the host runs, over every float
// whose bits are a multiple of 97 (44 million inputs across every exponent), every 16-bit value's rounding
// midpoint and its two neighbours, and the edges (zeros, subnormals, overflow, infinities, NaNs of both
// signs and payloads). The pairwise forms of the row kernels (to_storage_x2, from_storage_x2) are checked
// the same way.
#include <pk/config.hpp>
#include <pk/portable/numeric.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#if PK_ENABLE_CUDA && defined(__CUDACC__)
#include <pk/portable/convert.hpp>  // device code: a CUDA translation unit only

#include <cuda_runtime.h>

namespace {

__global__ void convert_kernel(const std::uint32_t* in, std::uint16_t* bf, std::uint16_t* hf, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const float f = pk::detail::bit_cast<float>(in[i]);
  bf[i] = pk::bf16(f).bits;
  hf[i] = pk::fp16(f).bits;
}

//! The partner of input i in a pair: half the inputs away, so that NaNs meet finite values and each other.
__host__ __device__ std::size_t partner(std::size_t i, std::size_t n) { return (i + n / 2) % n; }

//! The pairwise conversions of the row kernels: to_storage_x2 of (in[i], in[partner]) and from_storage_x2 of
//! in[i] read as two packed 16-bit values (its float bits, low half then high half).
__global__ void convert_x2_kernel(const std::uint32_t* in, std::uint32_t* bf2, std::uint32_t* hf2, std::uint32_t* bfw,
                                  std::uint32_t* hfw, std::uint32_t* hfs, std::uint32_t* hfv, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const float lo = pk::detail::bit_cast<float>(in[i]), hi = pk::detail::bit_cast<float>(in[partner(i, n)]);
  bf2[i] = pk::to_storage_x2<pk::bf16>(lo, hi);
  hf2[i] = pk::to_storage_x2<pk::fp16>(lo, hi);
  float a = 0, b = 0;
  pk::from_storage_x2<pk::bf16>(in[i], a, b);
  bfw[2 * i] = pk::detail::bit_cast<std::uint32_t>(a);
  bfw[2 * i + 1] = pk::detail::bit_cast<std::uint32_t>(b);
  pk::from_storage_x2<pk::fp16>(in[i], a, b);
  hfw[2 * i] = pk::detail::bit_cast<std::uint32_t>(a);
  hfw[2 * i + 1] = pk::detail::bit_cast<std::uint32_t>(b);
  // The scalar conversion of the low half, as a kernel converting one element at a time has it.
  hfs[i] = pk::detail::bit_cast<std::uint32_t>(static_cast<float>(pk::fp16::from_bits(static_cast<std::uint16_t>(in[i]))));
  // The arithmetic value of the low half, as the reduction and row kernels load it.
  hfv[i] = pk::detail::bit_cast<std::uint32_t>(pk::widen<float>(pk::fp16::from_bits(static_cast<std::uint16_t>(in[i]))));
}

std::vector<std::uint32_t> inputs() {
  std::vector<std::uint32_t> v;
  for (std::uint64_t b = 0; b <= 0xffffffffull; b += 97) v.push_back(static_cast<std::uint32_t>(b));
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const std::uint32_t bmid = (h << 16) | 0x8000u;  // bf16 midpoint between h and h + 1
    for (std::uint32_t d : {0u, 1u, 0xffffffffu}) v.push_back(bmid + d);
    // fp16 midpoints: halfway between fp16 value h and the next one of larger magnitude (exact in float).
    if ((h & 0x7fffu) < 0x7c00u) {
      const double lo = pk::detail::fp16_bits_to_float(static_cast<std::uint16_t>(h));
      const double hi = pk::detail::fp16_bits_to_float(static_cast<std::uint16_t>(h + 1));
      const std::uint32_t mb = pk::detail::bit_cast<std::uint32_t>(static_cast<float>((lo + hi) / 2));
      for (std::uint32_t d : {0u, 1u, 0xffffffffu}) v.push_back(mb + d);
    }
  }
  for (std::uint32_t e : {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u,
                          0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffbfffffu, 0x477ff000u, 0x477fefffu,
                          0x33000000u, 0x33000001u, 0x38800000u, 0x387fffffu})
    v.push_back(e);
  return v;
}

TEST(NumericGpu, SixteenBitConversionsMatchThePortablePath) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device: GPU conversions skipped";
  const std::vector<std::uint32_t> in = inputs();
  const std::size_t n = in.size();
  std::uint32_t* din = nullptr;
  std::uint16_t *dbf = nullptr, *dhf = nullptr;
  ASSERT_EQ(cudaMalloc(&din, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dbf, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dhf, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dbf, 0xA5, n * 2), cudaSuccess);  // poisoned: an element not written fails where 0xa5a5 is wrong
  ASSERT_EQ(cudaMemset(dhf, 0xA5, n * 2), cudaSuccess);
  convert_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(din, dbf, dhf, n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint16_t> bf(n), hf(n);
  ASSERT_EQ(cudaMemcpy(bf.data(), dbf, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hf.data(), dhf, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::size_t bad_bf = 0, bad_hf = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float f = pk::detail::bit_cast<float>(in[i]);
    const std::uint16_t wb = pk::detail::float_to_bf16_bits_portable(f), wh = pk::detail::float_to_fp16_bits_portable(f);
    if (bf[i] != wb && bad_bf++ < 5) ADD_FAILURE() << std::hex << "bf16 of 0x" << in[i] << ": GPU 0x" << bf[i] << ", host 0x" << wb;
    if (hf[i] != wh && bad_hf++ < 5) ADD_FAILURE() << std::hex << "fp16 of 0x" << in[i] << ": GPU 0x" << hf[i] << ", host 0x" << wh;
  }
  EXPECT_EQ(bad_bf, 0u);
  EXPECT_EQ(bad_hf, 0u);
  cudaFree(din);
  cudaFree(dbf);
  cudaFree(dhf);
}

TEST(NumericGpu, PairConversionsMatchThePortablePath) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device: GPU conversions skipped";
  const std::vector<std::uint32_t> in = inputs();
  const std::size_t n = in.size();
  std::uint32_t *din = nullptr, *dbf2 = nullptr, *dhf2 = nullptr, *dbfw = nullptr, *dhfw = nullptr, *dhfs = nullptr, *dhfv = nullptr;
  ASSERT_EQ(cudaMalloc(&din, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dbf2, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dhf2, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dbfw, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dhfw, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dhfs, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dhfv, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  // Poisoned outputs: a value the kernel failed to write cannot pass.
  ASSERT_EQ(cudaMemset(dbf2, 0xA5, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(dhf2, 0xA5, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(dbfw, 0xA5, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(dhfw, 0xA5, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(dhfs, 0xA5, n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(dhfv, 0xA5, n * 4), cudaSuccess);
  convert_x2_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(din, dbf2, dhf2, dbfw, dhfw, dhfs, dhfv, n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint32_t> bf2(n), hf2(n), bfw(2 * n), hfw(2 * n), hfs(n), hfv(n);
  ASSERT_EQ(cudaMemcpy(bf2.data(), dbf2, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hf2.data(), dhf2, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(bfw.data(), dbfw, n * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hfw.data(), dhfw, n * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hfs.data(), dhfs, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hfv.data(), dhfv, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  std::size_t bad = 0;
  const auto check = [&](const char* what, std::uint32_t input, std::uint32_t got, std::uint32_t want) {
    if (got != want && bad++ < 8) ADD_FAILURE() << std::hex << what << " of 0x" << input << ": GPU 0x" << got << ", host 0x" << want;
  };
  // A value conversion (pk::widen, from_storage_x2 of fp16): the portable bits for every non-NaN input, some NaN
  // (exponent all ones, mantissa not 0; the payload is not promised) for a NaN.
  const auto check_value = [&](const char* what, std::uint32_t input, std::uint32_t got, std::uint32_t want) {
    const auto is_nan = [](std::uint32_t b) { return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0; };
    if (is_nan(want) ? !is_nan(got) : got != want) check(what, input, got, want);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const float lo = pk::detail::bit_cast<float>(in[i]), hi = pk::detail::bit_cast<float>(in[partner(i, n)]);
    check("bf16 pair", in[i], bf2[i],
          std::uint32_t{pk::detail::float_to_bf16_bits_portable(lo)} | std::uint32_t{pk::detail::float_to_bf16_bits_portable(hi)} << 16);
    check("fp16 pair", in[i], hf2[i],
          std::uint32_t{pk::detail::float_to_fp16_bits_portable(lo)} | std::uint32_t{pk::detail::float_to_fp16_bits_portable(hi)} << 16);
    const auto lo16 = static_cast<std::uint16_t>(in[i] & 0xffffu), hi16 = static_cast<std::uint16_t>(in[i] >> 16);
    check("bf16 widen lo", in[i], bfw[2 * i], pk::detail::bit_cast<std::uint32_t>(pk::detail::bf16_bits_to_float(lo16)));
    check("bf16 widen hi", in[i], bfw[2 * i + 1], pk::detail::bit_cast<std::uint32_t>(pk::detail::bf16_bits_to_float(hi16)));
    check_value("fp16 widen lo", in[i], hfw[2 * i], pk::detail::bit_cast<std::uint32_t>(pk::detail::fp16_bits_to_float_portable(lo16)));
    check_value("fp16 widen hi", in[i], hfw[2 * i + 1], pk::detail::bit_cast<std::uint32_t>(pk::detail::fp16_bits_to_float_portable(hi16)));
    check_value("fp16 value", in[i], hfv[i], pk::detail::bit_cast<std::uint32_t>(pk::detail::fp16_bits_to_float_portable(lo16)));
    check("fp16 scalar widen", in[i], hfs[i], pk::detail::bit_cast<std::uint32_t>(pk::detail::fp16_bits_to_float_portable(lo16)));
  }
  EXPECT_EQ(bad, 0u);
  cudaFree(din);
  cudaFree(dbf2);
  cudaFree(dhf2);
  cudaFree(dbfw);
  cudaFree(dhfw);
  cudaFree(dhfs);
  cudaFree(dhfv);
}

}  // namespace

#else

TEST(NumericGpu, Skipped) { GTEST_SKIP() << "built without CUDA (PK_ENABLE_CUDA=OFF): GPU conversions skipped"; }

#endif
