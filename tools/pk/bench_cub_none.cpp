// pk bench in a build without CUDA: no CUB anchors (bench_gpu.hpp).
#include "bench_gpu.hpp"

namespace pk::tool {

bool have_cub() { return false; }
std::string cub_reduce_name(reduce_op, dtype) { return {}; }
status cub_reduce(const stream&, reduce_op, dtype, const void*, std::int64_t, void*, device_buffer<unsigned char>&) {
  return unsupported("cub_reduce: this build of pk has no CUDA backend (PK_ENABLE_CUDA=OFF)");
}

}  // namespace pk::tool
