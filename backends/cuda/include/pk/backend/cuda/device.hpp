// CUDA backend: device query, turned into an archdb query, and error conversion.
#pragma once
#include <pk/archdb/device.hpp>
#include <pk/status.hpp>

#include <cstdint>

namespace pk::backend::cuda {

//! Number of CUDA devices (0 when no driver or device is present; never an error).
int device_count() noexcept;
//! Queries device `ordinal` (cudaGetDeviceProperties) into an archdb query.
pk::status query(int ordinal, archdb::device_query& out);
//! A status for a CUDA runtime error code: errc::backend_error with "<what>: <cudaGetErrorString>".
pk::status from_error(int cuda_error, const char* what);

}  // namespace pk::backend::cuda

namespace pk::backend::cuda {

//! Encodes a tiled tensor map (cuTensorMapEncodeTiled, reached through cudaGetDriverEntryPointByVersion so
//! that pk does not link the driver library) into `out` (128 bytes, 64-byte aligned: a CUtensorMap).
//! dims/box in elements, strides in bytes (strides[0] is the element size and is not passed on); swizzle
//! numbered like CUtensorMapSwizzle; 16-bit elements, bf16 or fp16. Out-of-range elements read as zero.
pk::status encode_tensor_map(void* out, const void* base, int rank, bool bf16, const std::uint64_t* dims,
                             const std::uint64_t* strides, const std::uint32_t* box, int swizzle);

}  // namespace pk::backend::cuda
