// pk bench in a build without cuBLAS: the matrix roofline is the database's datasheet peak (bench_gpu.hpp).
#include "bench_gpu.hpp"

namespace pk::tool {

bool have_cublas() { return false; }
status cublas_gemm_bf16(const stream&, int, int, int, timing&) {
  return unsupported("cublas_gemm_bf16: this build of pk has no cuBLAS (PK_ENABLE_CUDA=OFF or CUDA::cublas not found)");
}

}  // namespace pk::tool
