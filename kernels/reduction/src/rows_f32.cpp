// Instances: softmax, log_softmax, layer_norm, rms_norm and row mean/variance of float, once per target.
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {
status rows_f32(const rows_call& c) { return run_rows<float>(c); }
}  // namespace impl
PK_DETAIL_TARGET_END
