// On-GPU check of pk::to_bf16 / pk::to_fp16 / to_float against the hardware conversions
// (cvt.rn.bf16.f32, cvt.rn.f16.f32 via cuda_bf16.h / cuda_fp16.h) for all 2^32 floats.
// nvcc -std=c++17 -O3 -arch=sm_90 -I portable/include cmake/hip_smoke/gpu_check.cu -o gpu_check
#include <pk/portable/numeric.hpp>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdio>

__device__ unsigned long long g_bad[4];

__device__ bool nan16(unsigned b, unsigned expmask, unsigned manmask) { return (b & expmask) == expmask && (b & manmask); }

__global__ void check_all(unsigned long long base) {
  const unsigned long long u64 = base + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned u = static_cast<unsigned>(u64);
  const float x = __uint_as_float(u);
  const unsigned pb = pk::to_bf16(x).bits, pf = pk::to_fp16(x).bits;
  const unsigned hb = __bfloat16_as_ushort(__float2bfloat16_rn(x)), hf = __half_as_ushort(__float2half_rn(x));
  if (x != x) {  // NaN: both NaN (hardware canonicalises, so payload/sign are not compared)
    if (!nan16(pb, 0x7f80u, 0x7fu) || !nan16(hb, 0x7f80u, 0x7fu)) atomicAdd(&g_bad[0], 1ull);
    if (!nan16(pf, 0x7c00u, 0x3ffu) || !nan16(hf, 0x7c00u, 0x3ffu)) atomicAdd(&g_bad[1], 1ull);
  } else {
    if (pb != hb) atomicAdd(&g_bad[0], 1ull);
    if (pf != hf) atomicAdd(&g_bad[1], 1ull);
  }
  if (u < 65536u) {
    const float a = pk::to_float(pk::bf16::from_bits(static_cast<std::uint16_t>(u)));
    const float b = __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(u)));
    const float c = pk::to_float(pk::fp16::from_bits(static_cast<std::uint16_t>(u)));
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(u)));
    if (!((a != a && b != b) || __float_as_uint(a) == __float_as_uint(b))) atomicAdd(&g_bad[2], 1ull);
    if (!((c != c && d != d) || __float_as_uint(c) == __float_as_uint(d))) atomicAdd(&g_bad[3], 1ull);
  }
}

int main() {
  const unsigned long long chunk = 1ull << 30;
  for (unsigned long long base = 0; base < (1ull << 32); base += chunk) check_all<<<chunk / 256, 256>>>(base);
  unsigned long long bad[4];
  cudaError_t e = cudaMemcpyFromSymbol(bad, g_bad, sizeof bad);
  std::printf("%s: mismatches vs hardware: to_bf16 %llu, to_fp16 %llu (2^32 floats); bf16->f32 %llu, f16->f32 %llu (65536)\n",
              cudaGetErrorString(e), bad[0], bad[1], bad[2], bad[3]);
  return (e != cudaSuccess || bad[0] || bad[1] || bad[2] || bad[3]) ? 1 : 0;
}
