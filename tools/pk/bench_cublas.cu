// pk bench, CUDA builds with cuBLAS: the matrix roofline, a bf16 GEMM through cublasGemmEx timed like pk's
// own runs (bench_gpu.hpp).
#include "bench_gpu.hpp"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pk::tool {
namespace {

status check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return {errc::backend_error, std::string(what) + ": " + cudaGetErrorString(e)};
}
status check(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return {};
  return {errc::backend_error, std::string(what) + ": " + cublasGetStatusString(e)};
}

//! Random values in [-1, 1) (a hash of the index; rounded to bf16): a GEMM of zeros would draw less power
//! and could clock higher than real data allows.
__global__ void fill_bf16(__nv_bfloat16* p, std::int64_t n, unsigned seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16(static_cast<float>(h & 0xffffff) * (2.0f / 16777216.0f) - 1.0f);
  }
}

//! Owns a cuBLAS handle.
struct handle {
  cublasHandle_t h = nullptr;
  ~handle() {
    if (h) (void)cublasDestroy(h);
  }
};

}  // namespace

bool have_cublas() { return true; }

status cublas_gemm_bf16(const stream& s, int size, int warmup, int reps, timing& out) {
  if (s.backend() != backend_kind::cuda) return unsupported("cublas_gemm_bf16: the stream is not a CUDA stream: " + s.describe());
  if (size < 1) return invalid_argument("cublas_gemm_bf16: size " + std::to_string(size) + " must be >= 1");
  const auto st = static_cast<cudaStream_t>(s.native());
  const std::size_t elems = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  device_buffer<__nv_bfloat16> a, b, c;
  PK_TRY(a.allocate(s, elems));
  PK_TRY(b.allocate(s, elems));
  PK_TRY(c.allocate(s, elems));
  constexpr int fill_blocks = 1024, fill_threads = 256;  // grid-stride: any size
  fill_bf16<<<fill_blocks, fill_threads, 0, st>>>(a.data(), static_cast<std::int64_t>(elems), 1u);
  fill_bf16<<<fill_blocks, fill_threads, 0, st>>>(b.data(), static_cast<std::int64_t>(elems), 2u);
  PK_TRY(check(cudaGetLastError(), "fill_bf16 (launch)"));
  handle h;
  PK_TRY(check(cublasCreate(&h.h), "cublasCreate"));
  PK_TRY(check(cublasSetStream(h.h, st), "cublasSetStream"));
  const float alpha = 1.0f, beta = 0.0f;
  PK_TRY(time_work(s, warmup, reps, [&]() -> status {
    return check(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha, a.data(), CUDA_R_16BF, size, b.data(),
                              CUDA_R_16BF, size, &beta, c.data(), CUDA_R_16BF, size, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }, out));
  return check(cudaStreamSynchronize(st), "cublasGemmEx (completion)");
}

}  // namespace pk::tool
