// HIP backend: device query, turned into an archdb query, and error conversion.
#pragma once
#include <pk/archdb/device.hpp>
#include <pk/status.hpp>

namespace pk::backend::hip {

//! Number of HIP devices (0 when no driver or device is present; never an error).
int device_count() noexcept;
//! Queries device `ordinal` (hipGetDeviceProperties) into an archdb query.
pk::status query(int ordinal, archdb::device_query& out);
//! A status for a HIP runtime error code: errc::backend_error with "<what>: <hipGetErrorString>".
pk::status from_error(int hip_error, const char* what);

}  // namespace pk::backend::hip
