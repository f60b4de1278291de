// pk's runtime: streams on any backend (the host emulator impersonating a device from the database,
// CUDA, HIP), device memory and copies. Kernel entry points take a pk::stream; work is enqueued on it
// and runs asynchronously on GPUs (the emulator runs each launch to completion before returning).
//
//   pk::stream s;
//   if (auto st = pk::stream::host("RTX 3090", s); !st) { ... }   // emulate an RTX 3090 on the CPU
//   if (auto st = pk::default_stream(s); !st) { ... }             // the GPU if there is one, else the emulator
#pragma once
#include <pk/archdb/device.hpp>
#include <pk/code_targets.hpp>
#include <pk/status.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pk {

const char* to_string(backend_kind b) noexcept;

//! "host_sm80", "cuda", ... (the code target table, pk/code_targets.hpp).
constexpr const char* to_string(target t) noexcept { return info(t).name; }
//! Whether this build contains code for `t`.
constexpr bool target_built(target t) noexcept { return info(t).built; }
//! The vendor whose ISA a target's code is for (a host target: the vendor of the ISA it emulates).
constexpr archdb::vendor vendor_of(target t) noexcept {
  const code_target_info& i = info(t);
  if (i.backend == backend_kind::cuda) return archdb::vendor::nvidia;
  if (i.backend == backend_kind::hip) return archdb::vendor::amd;
  return archdb::traits(i.isa).vendor_id;
}
//! The host target that emulates an arch: the one built for exactly its ISA (H100/H200 -> host_sm90a:
//! warpgroup MMA, tensor copies), else a built one whose emulated ISA has the arch's vendor and warp size
//! (NVIDIA -> host_sm80: mma.sync layouts, wave32; CDNA -> host_gfx942: MFMA, wave64; RDNA ->
//! host_gfx1100: WMMA, wave32), else that vendor's first one, built or not (stream::host then names it).
constexpr target host_target_for(archdb::arch isa) noexcept {
  const archdb::arch_traits& want = archdb::traits(isa);
  const auto similar = [&](const code_target_info& i) {
    return i.backend == backend_kind::host && archdb::traits(i.isa).vendor_id == want.vendor_id &&
           archdb::traits(i.isa).warp_size == want.warp_size;
  };
  for (const code_target_info& i : code_targets)
    if (i.backend == backend_kind::host && i.isa == isa && i.built) return i.id;
  for (const code_target_info& i : code_targets)
    if (similar(i) && i.built) return i.id;
  for (const code_target_info& i : code_targets)
    if (similar(i)) return i.id;
  return code_targets[0].id;
}

//! Where work runs: a backend, a native stream handle (cudaStream_t / hipStream_t; null = default
//! stream), the device described from archdb, and the code target used for it. Cheap to copy.
class stream {
 public:
  stream() = default;

  //! An emulator stream impersonating `device_name` (any archdb name or alias): its arch (warp size,
  //! matrix-instruction layouts) and its limits (shared memory per block, threads per block).
  static status host(std::string_view device_name, stream& out);
  //! Wraps an existing CUDA stream (not owned) on device `ordinal`; the device is identified in archdb.
  static status cuda(void* cuda_stream, int ordinal, stream& out);
  //! Wraps an existing HIP stream (not owned).
  static status hip(void* hip_stream, int ordinal, stream& out);

  [[nodiscard]] bool valid() const noexcept { return device_ != nullptr; }
  [[nodiscard]] backend_kind backend() const noexcept { return backend_; }
  [[nodiscard]] target code_target() const noexcept { return target_; }
  [[nodiscard]] void* native() const noexcept { return native_; }
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  [[nodiscard]] const archdb::device_desc& device() const noexcept { return *device_; }
  //! "host_sm80 impersonating RTX 3090" / "cuda device 0 (NVIDIA H200 -> H200 SXM)".
  [[nodiscard]] std::string describe() const;

 private:
  backend_kind backend_ = backend_kind::host;
  target target_ = code_targets[0].id;
  void* native_ = nullptr;
  int ordinal_ = 0;
  std::shared_ptr<const archdb::device_desc> device_;
};

//! The GPU if this build has a GPU backend and a device is present (device 0, its default stream);
//! otherwise the emulator impersonating $PK_HOST_DEVICE or, unset, the A100-SXM4-80GB.
status default_stream(stream& out);
//! The emulator impersonating $PK_HOST_DEVICE or, unset, the A100-SXM4-80GB (the host fallback of
//! default_stream, for callers that want the emulator explicitly).
status default_host_stream(stream& out);
//! Number of CUDA devices usable by this build (0 when built without CUDA or without a driver).
int cuda_device_count() noexcept;
//! Number of HIP devices usable by this build (0 when built without HIP or without a driver).
int hip_device_count() noexcept;
//! Waits for all work enqueued on `s`.
status synchronize(const stream& s);

//! Device memory on the stream's device (host memory for the emulator), 256-byte aligned.
status device_malloc(const stream& s, std::size_t bytes, void** out);
status device_free(const stream& s, void* p);
enum class copy_kind : std::uint8_t { host_to_device, device_to_host, device_to_device };
//! Copies and waits for completion (test and setup convenience).
status copy(const stream& s, void* dst, const void* src, std::size_t bytes, copy_kind kind);
//! Enqueues a copy on the stream (host memory must stay valid until the stream is synchronized).
status copy_async(const stream& s, void* dst, const void* src, std::size_t bytes, copy_kind kind);
status memset_async(const stream& s, void* dst, int byte, std::size_t bytes);

//! Owning device allocation of `n` elements of T.
template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept { swap(o); }
  device_buffer& operator=(device_buffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ~device_buffer() { reset(); }

  //! Allocates n elements (n may be 0: no allocation, data() is null).
  status allocate(const stream& s, std::size_t n) {
    reset();
    s_ = s;
    n_ = n;
    if (n == 0) return {};
    void* p = nullptr;
    PK_TRY(device_malloc(s, n * sizeof(T), &p));
    p_ = static_cast<T*>(p);
    return {};
  }
  status upload(const std::vector<T>& h) {
    if (h.size() != n_) return invalid_argument("device_buffer::upload: host size differs from the buffer size");
    return n_ ? copy(s_, p_, h.data(), n_ * sizeof(T), copy_kind::host_to_device) : status{};
  }
  status download(std::vector<T>& h) const {
    h.resize(n_);
    return n_ ? copy(s_, h.data(), p_, n_ * sizeof(T), copy_kind::device_to_host) : status{};
  }
  void reset() noexcept {
    if (p_) (void)device_free(s_, p_);
    p_ = nullptr;
    n_ = 0;
  }
  [[nodiscard]] T* data() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }

 private:
  void swap(device_buffer& o) noexcept {
    std::swap(s_, o.s_);
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  stream s_;
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

//! Allocator hook for library scratch memory: `alloc(bytes, stream, user)` returns device memory or
//! null, `free(ptr, stream, user)` releases it. Defaults to device_malloc/device_free.
struct workspace_allocator {
  void* (*alloc)(std::size_t bytes, const stream& s, void* user) = nullptr;
  void (*free)(void* p, const stream& s, void* user) = nullptr;
  void* user = nullptr;
};
//! Installs `a` (both functions set) or restores the default (both null). Not thread-safe with
//! concurrent kernel calls; call it at start-up.
status set_workspace_allocator(const workspace_allocator& a);

namespace detail {
//! Per-stream memory owned by the library, grown on demand and reused across calls (the user can supply
//! it instead through pk::set_workspace_allocator). Two buffers per stream, so that no call's data can land
//! where a later call expects zeros:
//!  - stream_workspace: counters only (tickets, flags), zero-filled whenever (re)allocated; kernels leave
//!    every counter they touch zero when they finish;
//!  - stream_scratch: data a call writes before it reads (partial results), any content between calls.
status stream_workspace(const stream& s, std::size_t bytes, void** out);
status stream_scratch(const stream& s, std::size_t bytes, void** out);
}  // namespace detail

}  // namespace pk
