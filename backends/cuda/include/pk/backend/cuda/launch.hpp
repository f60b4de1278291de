// CUDA backend: kernel launch (included by kernel launch code compiled as CUDA). Dynamic shared
// memory above the 48 KB default is opted into per kernel; every error comes back as a pk::status.
#pragma once
#include <pk/backend/cuda/device.hpp>
#include <pk/status.hpp>

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace pk::backend::cuda {

//! Bytes of shared memory, static and dynamic together, a kernel may use without
//! cudaFuncAttributeMaxDynamicSharedMemorySize [PG-CC: "48 KB static shared memory limit"; allocations above
//! it need the opt-in].
inline constexpr std::size_t default_dynamic_smem_limit = 48 * 1024;

//! The attributes of `kernel` as loaded on the current device (none when they cannot be queried). Cached per
//! device and kernel.
inline std::optional<cudaFuncAttributes> attributes_of(const void* kernel) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return std::nullopt;
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, std::optional<cudaFuncAttributes>> known;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(device, kernel);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  cudaFuncAttributes a{};
  std::optional<cudaFuncAttributes> got;
  if (cudaFuncGetAttributes(&a, kernel) == cudaSuccess) got = a;
  known.emplace(key, got);
  return got;
}

//! The static shared memory of `kernel` as loaded on the current device (0 when it cannot be queried: the
//! launch then reports what is wrong).
inline std::size_t static_smem_of(const void* kernel) {
  const std::optional<cudaFuncAttributes> a = attributes_of(kernel);
  return a ? a->sharedSizeBytes : 0;
}

//! Whether `kernel`, as loaded on the current device, was compiled for sm_90 or later (its PTX virtual
//! architecture): only such code holds the griddepcontrol.wait that an overlapped launch relies on. Code
//! compiled for an older architecture and JIT-compiled for a newer device (an sm_80 build on an H200; an sm_80 +
//! sm_90a build on sm_100, where the sm_90a code cannot run) has no wait, and launched to overlap its predecessor
//! it would read that kernel's results before they are written.
inline bool code_waits_for_grid(const void* kernel) {
  const std::optional<cudaFuncAttributes> a = attributes_of(kernel);
  return a && a->ptxVersion >= 90;
}

//! overlap_previous: programmatic dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization), used only
//! for code that waits (code_waits_for_grid; such code runs only on devices that have the launch): the kernel may
//! start before the previous kernel of the stream completes, and waits for it in device code (griddepcontrol.wait).
template <class... KArgs, class... Args>
pk::status launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, void* stream, const char* name,
                  bool overlap_previous, Args&&... args) {
  if (smem > 0 && smem + static_smem_of(reinterpret_cast<const void*>(kernel)) > default_dynamic_smem_limit) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return from_error(e, (std::string(name) + ": opting into dynamic shared memory").c_str());
  }
  if (overlap_previous && code_waits_for_grid(reinterpret_cast<const void*>(kernel))) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = static_cast<cudaStream_t>(stream);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, static_cast<Args&&>(args)...);
    if (e != cudaSuccess) return from_error(e, (std::string(name) + ": launch").c_str());
    return {};
  }
  kernel<<<grid, block, smem, static_cast<cudaStream_t>(stream)>>>(static_cast<Args&&>(args)...);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return from_error(e, (std::string(name) + ": launch").c_str());
  return {};
}

}  // namespace pk::backend::cuda
