// CUDA backend: device query, turned into an archdb query, and error conversion.
#pragma once
#include <pk/archdb/device.hpp>
#include <pk/status.hpp>

namespace pk::backend::cuda {

//! Number of CUDA devices (0 when no driver or device is present; never an error).
int device_count() noexcept;
//! Queries device `ordinal` (cudaGetDeviceProperties) into an archdb query.
pk::status query(int ordinal, archdb::device_query& out);
//! A status for a CUDA runtime error code: errc::backend_error with "<what>: <cudaGetErrorString>".
pk::status from_error(int cuda_error, const char* what);

}  // namespace pk::backend::cuda
