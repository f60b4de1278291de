// pk bench: the pieces that need the CUDA toolkit, each in its own .cu translation unit built only when
// PK_ENABLE_CUDA is on (bench_cub.cu; bench_cublas.cu when CMake finds CUDA::cublas). Builds without
// them link the stubs (bench_cub_none.cpp, bench_cublas_none.cpp), which report `unsupported`.
#pragma once
#include <pk/timing.hpp>

#include <pk/reduction/reduce.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <cstdint>
#include <string>

namespace pk::tool {

//! Whether this build has the CUB anchors (a CUDA build).
bool have_cub();
//! The CUB call `cub_reduce` makes for (op, t), e.g. "CUB DeviceReduce::Sum"; empty when it has none.
std::string cub_reduce_name(reduce_op op, dtype t);
//! Enqueues one CUB device-wide reduction of the `n` elements of type `t` at `in` on the CUDA stream `s`,
//! writing at most 8 bytes at `out`: sum or max; f32 in f32, 16-bit types read as such and reduced in
//! fp32 (DeviceReduce::TransformReduce, as pk accumulates them). `temp` is CUB's temporary storage,
//! grown here when too small (do a first, untimed call).
status cub_reduce(const stream& s, reduce_op op, dtype t, const void* in, std::int64_t n, void* out,
                  device_buffer<unsigned char>& temp);

//! Whether this build has cuBLAS.
bool have_cublas();
//! Times a bf16 GEMM C = A B, m = n = k = `size`, fp32 accumulation (cublasGemmEx, default algorithm) on
//! the CUDA stream `s` through time_work: `warmup` untimed runs, then `reps` timed ones.
status cublas_gemm_bf16(const stream& s, int size, int warmup, int reps, timing& out);

}  // namespace pk::tool
