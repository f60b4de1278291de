// Instances: every built-in reduction of std::uint8_t (device-wide, segmented, along an axis),
// compiled once per target (cmake/pk_targets.cmake). One element type per TU keeps compile units small.
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {
status reduce_u8(const reduce_call& c) { return run_reduce<std::uint8_t>(c); }
}  // namespace impl
PK_DETAIL_TARGET_END
