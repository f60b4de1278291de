// HIP backend: kernel launch (included by kernel launch code compiled as HIP).
#pragma once
#include <pk/backend/hip/device.hpp>
#include <pk/status.hpp>

#include <hip/hip_runtime.h>

#include <cstddef>
#include <string>

namespace pk::backend::hip {

template <class... KArgs, class... Args>
pk::status launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, void* stream, const char* name,
                  Args&&... args) {
  hipLaunchKernelGGL(kernel, grid, block, static_cast<unsigned>(smem), static_cast<hipStream_t>(stream),
                     static_cast<Args&&>(args)...);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess) return from_error(e, (std::string(name) + ": launch").c_str());
  return {};
}

}  // namespace pk::backend::hip
