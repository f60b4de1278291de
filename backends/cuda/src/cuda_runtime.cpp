// CUDA backend: runtime API wrappers. Every CUDA error becomes a pk::status carrying CUDA's message.
#include <pk/backend/cuda/device.hpp>
#include <pk/backend/cuda/memory.hpp>
#include <pk/backend/cuda/stream.hpp>

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

namespace pk::backend::cuda {

pk::status from_error(int e, const char* what) {
  const auto err = static_cast<cudaError_t>(e);
  return {errc::backend_error,
          std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err)};
}

namespace {
pk::status check(cudaError_t e, const char* what) { return e == cudaSuccess ? pk::status{} : from_error(e, what); }
pk::status use_device(int ordinal) { return check(cudaSetDevice(ordinal), "cudaSetDevice"); }

//! A driver API function reached through the runtime (pk does not link libcuda): `version` is the driver ABI
//! version of the signature the caller casts it to; null when the driver lacks it.
template <class Fn>
Fn driver_entry(const char* name, int version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}
}  // namespace

pk::status encode_tensor_map(void* out, const void* base, int rank, bool bf16, const std::uint64_t* dims,
                             const std::uint64_t* strides, const std::uint32_t* box, int swizzle) {
  using encode_fn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  // 12000: the driver ABI version of cuTensorMapEncodeTiled's signature (introduced in CUDA 12.0).
  static const encode_fn encode = driver_entry<encode_fn>("cuTensorMapEncodeTiled", 12000);
  if (encode == nullptr)
    return {errc::backend_error, "cuTensorMapEncodeTiled: not available from the driver (CUDA 12.0 or newer is required)"};
  if (rank < 1 || rank > 5) return {errc::internal, "encode_tensor_map: rank must be 1..5"};
  cuuint64_t d[5], st[4];
  cuuint32_t b[5], e[5];
  for (int i = 0; i < rank; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    e[i] = 1;
    if (i > 0) st[i - 1] = strides[i];
  }
  const CUresult r = encode(static_cast<CUtensorMap*>(out), bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                            static_cast<cuuint32_t>(rank), const_cast<void*>(base), d, st, b, e,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, static_cast<CUtensorMapSwizzle>(swizzle),
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return {errc::backend_error, "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                                     "): a dimension, stride, box or alignment the copy engine does not accept"};
  return {};
}

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

pk::status query(int ordinal, archdb::device_query& q) {
  cudaDeviceProp p{};
  PK_TRY(check(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties"));
  q.name = p.name;
  q.vendor_id = archdb::vendor::nvidia;
  q.cc_major = p.major;
  q.cc_minor = p.minor;
  q.sm_count = p.multiProcessorCount;
  q.warp_size = p.warpSize;
  q.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  q.max_threads_per_block = p.maxThreadsPerBlock;
  q.regs_per_sm = p.regsPerMultiprocessor;
  q.regs_per_block = p.regsPerBlock;
  q.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  q.smem_per_sm = static_cast<std::int64_t>(p.sharedMemPerMultiprocessor);
  q.smem_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock);
  q.smem_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlockOptin);
  q.smem_reserved_per_block = static_cast<std::int64_t>(p.reservedSharedMemPerBlock);
  q.l2_bytes = p.l2CacheSize;
  int mem_clock_khz = 0;
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess)
    q.mem_clock_khz = mem_clock_khz;
  else
    (void)cudaGetLastError();
  q.mem_bus_width_bits = p.memoryBusWidth;
  return {};
}

pk::status malloc_device(int ordinal, std::size_t bytes, void** out) {
  PK_TRY(use_device(ordinal));
  const cudaError_t e = cudaMalloc(out, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return {errc::out_of_memory, "cudaMalloc of " + std::to_string(bytes) + " bytes: out of device memory"};
  }
  return check(e, "cudaMalloc");
}

pk::status free_device(int ordinal, void* p) {
  PK_TRY(use_device(ordinal));
  return check(cudaFree(p), "cudaFree");
}

pk::status copy_async(int ordinal, void* dst, const void* src, std::size_t bytes, int kind, void* stream) {
  PK_TRY(use_device(ordinal));
  const cudaMemcpyKind k =
      kind == 0 ? cudaMemcpyHostToDevice : (kind == 1 ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  return check(cudaMemcpyAsync(dst, src, bytes, k, static_cast<cudaStream_t>(stream)), "cudaMemcpyAsync");
}

pk::status memset_async(int ordinal, void* dst, int byte, std::size_t bytes, void* stream) {
  PK_TRY(use_device(ordinal));
  return check(cudaMemsetAsync(dst, byte, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync");
}

pk::status synchronize(int ordinal, void* stream) {
  PK_TRY(use_device(ordinal));
  return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

pk::status is_capturing(int ordinal, void* stream, bool& out) {
  PK_TRY(use_device(ordinal));
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  PK_TRY(check(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &st), "cudaStreamIsCapturing"));
  out = st != cudaStreamCaptureStatusNone;
  return {};
}

event_timer::~event_timer() {
  if (start_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

pk::status event_timer::init(int ordinal) {
  PK_TRY(use_device(ordinal));
  cudaEvent_t a = nullptr, b = nullptr;
  PK_TRY(check(cudaEventCreate(&a), "cudaEventCreate"));
  start_ = a;
  PK_TRY(check(cudaEventCreate(&b), "cudaEventCreate"));
  stop_ = b;
  return {};
}
pk::status event_timer::start(void* stream) {
  return check(cudaEventRecord(static_cast<cudaEvent_t>(start_), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
}
pk::status event_timer::stop(void* stream) {
  return check(cudaEventRecord(static_cast<cudaEvent_t>(stop_), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
}
pk::status event_timer::elapsed_ms(float& ms) {
  PK_TRY(check(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)), "cudaEventSynchronize"));
  return check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)),
               "cudaEventElapsedTime");
}

stream_gate::~stream_gate() {
  if (word_) (void)cudaFreeHost(word_);
}
pk::status stream_gate::init(int ordinal) {
  PK_TRY(use_device(ordinal));
  void* w = nullptr;
  PK_TRY(check(cudaHostAlloc(&w, sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc (stream gate)"));
  word_ = w;
  *static_cast<volatile unsigned*>(word_) = 0;
  return check(cudaHostGetDevicePointer(&device_word_, word_, 0), "cudaHostGetDevicePointer (stream gate)");
}
pk::status stream_gate::hold(void* stream) {
  using wait_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  // 12000: the driver ABI version of cuStreamWaitValue32's signature in CUDA 12 (the former _v2).
  static const wait_fn wait = driver_entry<wait_fn>("cuStreamWaitValue32", 12000);
  if (wait == nullptr) return {errc::unsupported, "stream_gate: the driver has no cuStreamWaitValue32"};
  const unsigned next = value_ + 1;
  const CUresult r = wait(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(device_word_), next,
                          CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS) return {errc::unsupported, "stream_gate: cuStreamWaitValue32 failed (" + std::to_string(r) + ")"};
  value_ = next;
  return {};
}
void stream_gate::release() noexcept {
  if (word_) __atomic_store_n(static_cast<unsigned*>(word_), value_, __ATOMIC_SEQ_CST);
}

}  // namespace pk::backend::cuda
