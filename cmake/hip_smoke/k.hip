// HIP device-compile smoke test for cmake/hip_devlibs.sh (see run.sh): HIP headers from
// /usr/include/hip (ROCm 5.2), a cross-lane shuffle, a ballot and one matrix-core builtin per arch.
#include <hip/hip_runtime.h>

typedef short pk_v4i16 __attribute__((ext_vector_type(4)));
typedef short pk_v16i16 __attribute__((ext_vector_type(16)));
typedef float pk_v8f32 __attribute__((ext_vector_type(8)));
typedef float pk_v16f32 __attribute__((ext_vector_type(16)));

__global__ void smoke(const float* in, float* out, unsigned long long* mask, const short* ab) {
  const int lane = static_cast<int>(threadIdx.x);
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  v += __shfl_xor(v, 1);
  const unsigned long long m = __ballot(v > 0.0f);
  if (lane == 0) mask[blockIdx.x] = m;
#if defined(__gfx90a__) || defined(__gfx942__)
  // 32x32x8 bf16 MFMA, wave64: A and B are 4 bf16 per lane, C/D 16 floats per lane.
  pk_v4i16 a, b;
  for (int i = 0; i < 4; ++i) { a[i] = ab[lane * 4 + i]; b[i] = ab[256 + lane * 4 + i]; }
  pk_v16f32 acc = {};
  acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc, 0, 0, 0);
  for (int i = 0; i < 16; ++i) v += acc[i];
#elif defined(__gfx1100__)
  // 16x16x16 bf16 WMMA, wave32: A and B are 16 bf16 per lane, C/D 8 floats per lane.
  pk_v16i16 a, b;
  for (int i = 0; i < 16; ++i) { a[i] = ab[lane * 16 + i]; b[i] = ab[512 + lane * 16 + i]; }
  pk_v8f32 acc = {};
  acc = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a, b, acc);
  for (int i = 0; i < 8; ++i) v += acc[i];
#endif
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
