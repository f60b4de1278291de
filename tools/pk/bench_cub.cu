// pk bench, CUDA builds: CUB device-wide reductions as in-binary anchors (bench_gpu.hpp). CUB ships with
// the CUDA toolkit; the same calls as bench/reduction/bench_reduce.cu.
#include "bench_gpu.hpp"

#include <cub/device/device_reduce.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <limits>

namespace pk::tool {
namespace {

status check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return {errc::backend_error, std::string(what) + ": " + cudaGetErrorString(e)};
}

struct to_float {
  __device__ float operator()(__nv_bfloat16 x) const { return __bfloat162float(x); }
  __device__ float operator()(__half x) const { return __half2float(x); }
};
struct plus_f32 {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct max_f32 {
  __device__ float operator()(float a, float b) const { return a < b ? b : a; }
};

//! One CUB call: with temp == nullptr it only sets `bytes` (CUB's two-phase protocol).
template <class T>
cudaError_t call(reduce_op op, void* temp, std::size_t& bytes, const void* in, std::int64_t n, void* out, cudaStream_t st) {
  const T* x = static_cast<const T*>(in);
  if constexpr (std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>) {
    float* y = static_cast<float*>(out);
    if (op == reduce_op::sum) return cub::DeviceReduce::TransformReduce(temp, bytes, x, y, n, plus_f32{}, to_float{}, 0.0f, st);
    return cub::DeviceReduce::TransformReduce(temp, bytes, x, y, n, max_f32{}, to_float{},
                                              -std::numeric_limits<float>::infinity(), st);
  } else {
    T* y = static_cast<T*>(out);
    if (op == reduce_op::sum) return cub::DeviceReduce::Sum(temp, bytes, x, y, n, st);
    return cub::DeviceReduce::Max(temp, bytes, x, y, n, st);
  }
}

cudaError_t dispatch(reduce_op op, dtype t, void* temp, std::size_t& bytes, const void* in, std::int64_t n, void* out,
                     cudaStream_t st) {
  switch (t) {
    case dtype::f32: return call<float>(op, temp, bytes, in, n, out, st);
    case dtype::f64: return call<double>(op, temp, bytes, in, n, out, st);
    case dtype::f16: return call<__half>(op, temp, bytes, in, n, out, st);
    default: return call<__nv_bfloat16>(op, temp, bytes, in, n, out, st);
  }
}

}  // namespace

bool have_cub() { return true; }

std::string cub_reduce_name(reduce_op op, dtype t) {
  const bool narrow = t == dtype::f16 || t == dtype::bf16;
  if (t != dtype::f32 && t != dtype::f64 && !narrow) return {};
  if (op == reduce_op::sum) return narrow ? "CUB DeviceReduce::TransformReduce (sum, fp32)" : "CUB DeviceReduce::Sum";
  if (op == reduce_op::max) return narrow ? "CUB DeviceReduce::TransformReduce (max, fp32)" : "CUB DeviceReduce::Max";
  return {};
}

status cub_reduce(const stream& s, reduce_op op, dtype t, const void* in, std::int64_t n, void* out,
                  device_buffer<unsigned char>& temp) {
  if (s.backend() != backend_kind::cuda) return unsupported("cub_reduce: the stream is not a CUDA stream: " + s.describe());
  if (cub_reduce_name(op, t).empty())
    return unsupported(std::string("cub_reduce: no CUB anchor for op ") + to_string(op) + " on " + to_string(t));
  const auto st = static_cast<cudaStream_t>(s.native());
  std::size_t bytes = 0;
  PK_TRY(check(dispatch(op, t, nullptr, bytes, in, n, out, st), "cub::DeviceReduce (temporary storage size)"));
  if (bytes > temp.size()) PK_TRY(temp.allocate(s, bytes));
  PK_TRY(check(dispatch(op, t, temp.data(), bytes, in, n, out, st), "cub::DeviceReduce"));
  return check(cudaPeekAtLastError(), "cub::DeviceReduce (launch)");
}

}  // namespace pk::tool
