// Compile check of pk/portable/numeric.hpp in device code (nvcc and clang HIP: see run.sh).
#include <pk/portable/numeric.hpp>

PK_KERNEL void numeric_convert(const float* in, pk::bf16* ob, pk::fp16* oh, float* back, int n) {
#if defined(__HIP__)
  const int i = static_cast<int>(__builtin_amdgcn_workgroup_id_x() * 256u + __builtin_amdgcn_workitem_id_x());
#else
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
#endif
  if (i >= n) return;
  const pk::bf16 b = pk::to_bf16(in[i]);
  const pk::fp16 h(in[i]);
  ob[i] = b;
  oh[i] = h;
  const pk::bf16x2 pair{b, pk::bf16(static_cast<float>(h))};
  back[i] = pk::to_float(pair.x) + static_cast<float>(pair.y) + pk::to_float(h) +
            pk::to_float(pk::numeric_traits<pk::fp16>::max()) +
            static_cast<float>(pk::numeric_traits<pk::bf16>::epsilon());
}

#if PK_NUMERIC_CONSTEXPR_CONVERSIONS
static_assert(pk::to_fp16(1.0f).bits == 0x3c00u, "constexpr fp16");
static_assert(pk::to_bf16(1.0f).bits == 0x3f80u, "constexpr bf16");
#endif
