// Host emulator backend: "device" memory is host memory, aligned like cudaMalloc's.
#pragma once
#include <pk/status.hpp>

#include <cstddef>

namespace pk::backend::host {

//! Alignment of device allocations (cudaMalloc guarantees at least 256 bytes).
inline constexpr std::size_t device_alignment = 256;

pk::status malloc_device(std::size_t bytes, void** out);
pk::status free_device(void* p);
//! Copies immediately (the emulator's streams are synchronous).
pk::status copy_async(void* dst, const void* src, std::size_t bytes);
pk::status memset_async(void* dst, int byte, std::size_t bytes);

}  // namespace pk::backend::host
