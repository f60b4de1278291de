// Includes the backend intrinsics for this translation unit's target and defines the call-site type.
// Internal to portable/.
#pragma once
#include <pk/portable/target.hpp>

#if defined(PK_DETAIL_BACKEND_HOST)
#include <pk/backend/host/intrinsics.hpp>
#elif defined(PK_DETAIL_BACKEND_CUDA)
#include <pk/backend/cuda/intrinsics.hpp>
#elif defined(PK_DETAIL_BACKEND_HIP)
#include <pk/backend/hip/intrinsics.hpp>
#endif

PK_DETAIL_TARGET_BEGIN
namespace impl {
#if defined(PK_DETAIL_BACKEND_HOST)
//! Where a collective is called; the emulator names it in divergence and deadlock reports.
using site = ::pk::backend::host::call_site;
#else
//! On GPUs call sites are not recorded; the parameter is empty and optimized away.
struct site {
  static constexpr PK_HOST_DEVICE site current(const char* = "") noexcept { return {}; }
};
#endif
}  // namespace impl
PK_DETAIL_TARGET_END
