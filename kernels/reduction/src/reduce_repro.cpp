// Instances: the reproducible fp32 and fp64 sums, once per target. This TU is compiled without FMA
// contraction (kernels/reduction/CMakeLists.txt: -ffp-contract=off, nvcc --fmad=false): the kernels
// only add, but the bits must not depend on a compiler's choice.
#include <pk/reduction/detail/reduce_launch.hpp>

PK_DETAIL_TARGET_BEGIN
namespace impl {
status repro_f32(const repro_call& c) { return run_repro<float>(c); }
status repro_f64(const repro_call& c) { return run_repro<double>(c); }
}  // namespace impl
PK_DETAIL_TARGET_END
