// Instances: fp32 sum, compiled once per target (see cmake/pk_targets.cmake).
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {

struct identity_load {
  PK_HOST_DEVICE float operator()(float x) const { return x; }
};

status reduce_sum_f32(const reduce_call& c) {
  return reduce_launch<float, float>(c, plus{}, 0.0f, identity_load{});
}

}  // namespace impl
PK_DETAIL_TARGET_END
