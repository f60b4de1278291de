// HIP backend: runtime API wrappers (the same interface as backends/cuda). Every HIP error becomes a
// pk::status carrying HIP's message.
#include <pk/backend/hip/device.hpp>
#include <pk/backend/hip/memory.hpp>
#include <pk/backend/hip/stream.hpp>

#include <hip/hip_runtime_api.h>

#include <string>

namespace pk::backend::hip {

pk::status from_error(int e, const char* what) {
  const auto err = static_cast<hipError_t>(e);
  return {errc::backend_error, std::string(what) + ": " + hipGetErrorName(err) + ": " + hipGetErrorString(err)};
}

namespace {
pk::status check(hipError_t e, const char* what) { return e == hipSuccess ? pk::status{} : from_error(e, what); }
pk::status use_device(int ordinal) { return check(hipSetDevice(ordinal), "hipSetDevice"); }
}  // namespace

int device_count() noexcept {
  int n = 0;
  if (hipGetDeviceCount(&n) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  return n;
}

pk::status query(int ordinal, archdb::device_query& q) {
  hipDeviceProp_t p{};
  PK_TRY(check(hipGetDeviceProperties(&p, ordinal), "hipGetDeviceProperties"));
  q.name = p.name;
  q.vendor_id = archdb::vendor::amd;
  q.gcn_arch_name = p.gcnArchName;
  q.sm_count = p.multiProcessorCount;
  q.warp_size = p.warpSize;
  q.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  q.max_threads_per_block = p.maxThreadsPerBlock;
  q.regs_per_block = p.regsPerBlock;
  q.smem_per_sm = static_cast<std::int64_t>(p.maxSharedMemoryPerMultiProcessor);
  q.smem_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock);
  q.smem_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlock);  // LDS has no opt-in step on AMD
  q.l2_bytes = p.l2CacheSize;
  q.mem_clock_khz = p.memoryClockRate;
  q.mem_bus_width_bits = p.memoryBusWidth;
  return {};
}

pk::status malloc_device(int ordinal, std::size_t bytes, void** out) {
  PK_TRY(use_device(ordinal));
  const hipError_t e = hipMalloc(out, bytes);
  if (e == hipErrorOutOfMemory) {
    (void)hipGetLastError();
    return {errc::out_of_memory, "hipMalloc of " + std::to_string(bytes) + " bytes: out of device memory"};
  }
  return check(e, "hipMalloc");
}

pk::status free_device(int ordinal, void* p) {
  PK_TRY(use_device(ordinal));
  return check(hipFree(p), "hipFree");
}

pk::status copy_async(int ordinal, void* dst, const void* src, std::size_t bytes, int kind, void* stream) {
  PK_TRY(use_device(ordinal));
  const hipMemcpyKind k = kind == 0 ? hipMemcpyHostToDevice : (kind == 1 ? hipMemcpyDeviceToHost : hipMemcpyDeviceToDevice);
  return check(hipMemcpyAsync(dst, src, bytes, k, static_cast<hipStream_t>(stream)), "hipMemcpyAsync");
}

pk::status memset_async(int ordinal, void* dst, int byte, std::size_t bytes, void* stream) {
  PK_TRY(use_device(ordinal));
  return check(hipMemsetAsync(dst, byte, bytes, static_cast<hipStream_t>(stream)), "hipMemsetAsync");
}

pk::status synchronize(int ordinal, void* stream) {
  PK_TRY(use_device(ordinal));
  return check(hipStreamSynchronize(static_cast<hipStream_t>(stream)), "hipStreamSynchronize");
}

pk::status is_capturing(int ordinal, void* stream, bool& out) {
  PK_TRY(use_device(ordinal));
  hipStreamCaptureStatus st = hipStreamCaptureStatusNone;
  PK_TRY(check(hipStreamIsCapturing(static_cast<hipStream_t>(stream), &st), "hipStreamIsCapturing"));
  out = st != hipStreamCaptureStatusNone;
  return {};
}

event_timer::~event_timer() {
  if (start_) (void)hipEventDestroy(static_cast<hipEvent_t>(start_));
  if (stop_) (void)hipEventDestroy(static_cast<hipEvent_t>(stop_));
}
pk::status event_timer::init(int ordinal) {
  PK_TRY(use_device(ordinal));
  hipEvent_t a = nullptr, b = nullptr;
  PK_TRY(check(hipEventCreate(&a), "hipEventCreate"));
  start_ = a;
  PK_TRY(check(hipEventCreate(&b), "hipEventCreate"));
  stop_ = b;
  return {};
}
pk::status event_timer::start(void* stream) {
  return check(hipEventRecord(static_cast<hipEvent_t>(start_), static_cast<hipStream_t>(stream)), "hipEventRecord");
}
pk::status event_timer::stop(void* stream) {
  return check(hipEventRecord(static_cast<hipEvent_t>(stop_), static_cast<hipStream_t>(stream)), "hipEventRecord");
}
pk::status event_timer::elapsed_ms(float& ms) {
  PK_TRY(check(hipEventSynchronize(static_cast<hipEvent_t>(stop_)), "hipEventSynchronize"));
  return check(hipEventElapsedTime(&ms, static_cast<hipEvent_t>(start_), static_cast<hipEvent_t>(stop_)),
               "hipEventElapsedTime");
}

stream_gate::~stream_gate() {
  if (word_) (void)hipHostFree(word_);
}
pk::status stream_gate::init(int ordinal) {
  PK_TRY(use_device(ordinal));
  void* w = nullptr;
  PK_TRY(check(hipHostMalloc(&w, sizeof(unsigned), hipHostMallocMapped), "hipHostMalloc (stream gate)"));
  word_ = w;
  *static_cast<volatile unsigned*>(word_) = 0;
  return check(hipHostGetDevicePointer(&device_word_, word_, 0), "hipHostGetDevicePointer (stream gate)");
}
pk::status stream_gate::hold(void* stream) {
  const unsigned next = value_ + 1;
  const hipError_t e = hipStreamWaitValue32(static_cast<hipStream_t>(stream), device_word_, next, hipStreamWaitValueGte,
                                            0xffffffffu);
  if (e != hipSuccess) {
    (void)hipGetLastError();
    return {errc::unsupported, std::string("stream_gate: hipStreamWaitValue32: ") + hipGetErrorString(e)};
  }
  value_ = next;
  return {};
}
void stream_gate::release() noexcept {
  if (word_) __atomic_store_n(static_cast<unsigned*>(word_), value_, __ATOMIC_SEQ_CST);
}

}  // namespace pk::backend::hip
