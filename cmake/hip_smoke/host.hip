// HIP host-side smoke test: runtime API + kernel launch, compiled host+device with clang++-19 and
// linked against Debian's libamdhip64 (see run.sh). Without a GPU it reports the runtime error.
#include <hip/hip_runtime.h>
#include <pk/portable/numeric.hpp>

#include <cstdio>

__global__ void to_bf16_kernel(const float* in, pk::bf16* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = pk::to_bf16(in[i]);
}

int main() {
  int count = 0;
  hipError_t err = hipGetDeviceCount(&count);
  std::printf("hipGetDeviceCount: %s, count=%d\n", hipGetErrorString(err), count);
  if (err != hipSuccess || count == 0) return 0;  // no GPU here: compile + link is the check
  constexpr int n = 1024;
  float* in = nullptr;
  pk::bf16* out = nullptr;
  if (hipMalloc(&in, n * sizeof(float)) != hipSuccess || hipMalloc(&out, n * sizeof(pk::bf16)) != hipSuccess) return 1;
  hipLaunchKernelGGL(to_bf16_kernel, dim3(n / 256), dim3(256), 0, 0, in, out, n);
  err = hipDeviceSynchronize();
  std::printf("kernel: %s\n", hipGetErrorString(err));
  (void)hipFree(in);
  (void)hipFree(out);
  return err == hipSuccess ? 0 : 1;
}
