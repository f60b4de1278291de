// Instances: every built-in reduction of bf16 (device-wide, segmented, along an axis, mean/variance),
// compiled once per target (cmake/pk_targets.cmake). One element type per TU keeps compile units small.
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {
status reduce_bf16(const reduce_call& c) { return run_reduce<bf16>(c); }
}  // namespace impl
PK_DETAIL_TARGET_END
