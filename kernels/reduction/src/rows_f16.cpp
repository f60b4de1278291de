// Instances: softmax, log_softmax, layer_norm, rms_norm and row mean/variance of fp16, once per target.
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {
status rows_f16(const rows_call& c) { return run_rows<fp16>(c); }
}  // namespace impl
PK_DETAIL_TARGET_END
