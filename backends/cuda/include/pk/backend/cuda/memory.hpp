// CUDA backend: device memory and copies.
#pragma once
#include <pk/status.hpp>

#include <cstddef>

namespace pk::backend::cuda {

pk::status malloc_device(int ordinal, std::size_t bytes, void** out);
pk::status free_device(int ordinal, void* p);
//! kind: 0 host->device, 1 device->host, 2 device->device. Asynchronous on `stream`.
pk::status copy_async(int ordinal, void* dst, const void* src, std::size_t bytes, int kind, void* stream);
pk::status memset_async(int ordinal, void* dst, int byte, std::size_t bytes, void* stream);

}  // namespace pk::backend::cuda
