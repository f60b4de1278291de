// Instances: softmax, log_softmax, layer_norm, rms_norm and row mean/variance of double, once per target.
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {
status rows_f64(const rows_call& c) { return run_rows<double>(c); }
}  // namespace impl
PK_DETAIL_TARGET_END
