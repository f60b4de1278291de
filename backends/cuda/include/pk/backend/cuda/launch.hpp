// CUDA backend: kernel launch (included by kernel launch code compiled as CUDA). Dynamic shared
// memory above the 48 KB default is opted into per kernel; every error comes back as a pk::status.
#pragma once
#include <pk/backend/cuda/device.hpp>
#include <pk/status.hpp>

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace pk::backend::cuda {

//! Bytes of dynamic shared memory a kernel may use without cudaFuncAttributeMaxDynamicSharedMemorySize
//! [PG-CC: "48 KB static shared memory limit"; dynamic allocations above it need the opt-in].
inline constexpr std::size_t default_dynamic_smem_limit = 48 * 1024;

template <class... KArgs, class... Args>
pk::status launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, void* stream, const char* name,
                  Args&&... args) {
  if (smem > default_dynamic_smem_limit) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return from_error(e, (std::string(name) + ": opting into dynamic shared memory").c_str());
  }
  kernel<<<grid, block, smem, static_cast<cudaStream_t>(stream)>>>(static_cast<Args&&>(args)...);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return from_error(e, (std::string(name) + ": launch").c_str());
  return {};
}

}  // namespace pk::backend::cuda
