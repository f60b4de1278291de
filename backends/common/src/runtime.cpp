// Runtime dispatch over the built backends: streams, memory, copies, workspace.
#include <pk/backend/host/device.hpp>
#include <pk/backend/host/memory.hpp>
#include <pk/backend/host/stream.hpp>
#include <pk/config.hpp>
#include <pk/runtime.hpp>

#if PK_ENABLE_CUDA
#include <pk/backend/cuda/device.hpp>
#include <pk/backend/cuda/memory.hpp>
#include <pk/backend/cuda/stream.hpp>
#endif
#if PK_ENABLE_HIP
#include <pk/backend/hip/device.hpp>
#include <pk/backend/hip/memory.hpp>
#include <pk/backend/hip/stream.hpp>
#endif

#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

namespace pk {

const char* to_string(backend_kind b) noexcept {
  switch (b) {
    case backend_kind::host: return "host";
    case backend_kind::cuda: return "cuda";
    case backend_kind::hip: return "hip";
  }
  return "?";
}

status stream::host(std::string_view device_name, stream& out) {
  const archdb::device_desc* d = nullptr;
  PK_TRY(backend::host::impersonate(device_name, &d));
  const target t = host_target_for(d->isa);
  if (!target_built(t))
    return unsupported(std::string("emulating ") + d->name + " needs the " + to_string(t) +
                       " target, which this build leaves out (PK_HOST_ARCHS)");
  out = stream{};
  out.backend_ = backend_kind::host;
  out.target_ = t;
  out.device_ = std::make_shared<const archdb::device_desc>(*d);  // a copy: the table may grow later
  return {};
}

status stream::cuda(void* cuda_stream, int ordinal, stream& out) {
#if PK_ENABLE_CUDA
  const int n = backend::cuda::device_count();
  if (ordinal < 0 || ordinal >= n)
    return invalid_argument("stream::cuda: ordinal " + std::to_string(ordinal) + " must be in [0, " +
                            std::to_string(n) + ") (CUDA devices present)");
  // One resolution per device: the database entry matched to (and overridden by) the query.
  static std::mutex mu;
  static std::map<int, std::shared_ptr<const archdb::device_desc>> resolved;
  std::shared_ptr<const archdb::device_desc> d;
  {
    std::lock_guard<std::mutex> g(mu);
    auto it = resolved.find(ordinal);
    if (it == resolved.end()) {
      archdb::device_query q;
      PK_TRY(backend::cuda::query(ordinal, q));
      it = resolved.emplace(ordinal, std::make_shared<const archdb::device_desc>(archdb::resolve_device(q))).first;
    }
    d = it->second;
  }
  out = stream{};
  out.backend_ = backend_kind::cuda;
  out.target_ = target::cuda;
  out.native_ = cuda_stream;
  out.ordinal_ = ordinal;
  out.device_ = std::move(d);
  return {};
#else
  (void)cuda_stream;
  (void)ordinal;
  (void)out;
  return unsupported("stream::cuda: this build of pk has no CUDA backend (configure with a cuda preset)");
#endif
}

status stream::hip(void* hip_stream, int ordinal, stream& out) {
#if PK_ENABLE_HIP
  const int n = backend::hip::device_count();
  if (ordinal < 0 || ordinal >= n)
    return invalid_argument("stream::hip: ordinal " + std::to_string(ordinal) + " must be in [0, " +
                            std::to_string(n) + ") (HIP devices present)");
  archdb::device_query q;
  PK_TRY(backend::hip::query(ordinal, q));
  out = stream{};
  out.backend_ = backend_kind::hip;
  out.target_ = target::hip;
  out.native_ = hip_stream;
  out.ordinal_ = ordinal;
  out.device_ = std::make_shared<const archdb::device_desc>(archdb::resolve_device(q));
  return {};
#else
  (void)hip_stream;
  (void)ordinal;
  (void)out;
  return unsupported("stream::hip: this build of pk has no HIP backend (configure with a hip preset)");
#endif
}

std::string stream::describe() const {
  if (!valid()) return "(invalid stream)";
  if (backend_ == backend_kind::host) return std::string(to_string(target_)) + " emulator impersonating " + device_->name;
  return std::string(to_string(backend_)) + " device " + std::to_string(ordinal_) + " (" + device_->name +
         (device_->synthesized ? ", synthesized from the device query" : "") + ")";
}

int cuda_device_count() noexcept {
#if PK_ENABLE_CUDA
  return backend::cuda::device_count();
#else
  return 0;
#endif
}

int hip_device_count() noexcept {
#if PK_ENABLE_HIP
  return backend::hip::device_count();
#else
  return 0;
#endif
}

status default_stream(stream& out) {
#if PK_ENABLE_CUDA
  if (backend::cuda::device_count() > 0) return stream::cuda(nullptr, 0, out);
#endif
#if PK_ENABLE_HIP
  if (backend::hip::device_count() > 0) return stream::hip(nullptr, 0, out);
#endif
  return default_host_stream(out);
}

status default_host_stream(stream& out) {
  // The default is the device of the first host target in the code target table (host_sm80: the
  // A100, the oldest arch the CUDA backend supports, whose limits admit every compiled NVIDIA candidate).
  const char* env = std::getenv("PK_HOST_DEVICE");
  return stream::host(env && *env ? env : code_targets[0].device, out);
}

namespace {
status require(const stream& s, const char* api) {
  if (!s.valid()) return invalid_argument(std::string(api) + ": stream is not initialized (use pk::default_stream or pk::stream::host/cuda)");
  return {};
}
}  // namespace

status synchronize(const stream& s) {
  PK_TRY(require(s, "synchronize"));
  switch (s.backend()) {
    case backend_kind::host: return backend::host::synchronize();
#if PK_ENABLE_CUDA
    case backend_kind::cuda: return backend::cuda::synchronize(s.ordinal(), s.native());
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip: return backend::hip::synchronize(s.ordinal(), s.native());
#endif
    default: return unsupported("synchronize: backend not built");
  }
}

status device_malloc(const stream& s, std::size_t bytes, void** out) {
  PK_TRY(require(s, "device_malloc"));
  if (!out) return invalid_argument("device_malloc: out must not be null");
  switch (s.backend()) {
    case backend_kind::host: return backend::host::malloc_device(bytes, out);
#if PK_ENABLE_CUDA
    case backend_kind::cuda: return backend::cuda::malloc_device(s.ordinal(), bytes, out);
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip: return backend::hip::malloc_device(s.ordinal(), bytes, out);
#endif
    default: return unsupported("device_malloc: backend not built");
  }
}

status device_free(const stream& s, void* p) {
  PK_TRY(require(s, "device_free"));
  switch (s.backend()) {
    case backend_kind::host: return backend::host::free_device(p);
#if PK_ENABLE_CUDA
    case backend_kind::cuda: return backend::cuda::free_device(s.ordinal(), p);
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip: return backend::hip::free_device(s.ordinal(), p);
#endif
    default: return unsupported("device_free: backend not built");
  }
}

status copy_async(const stream& s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
  PK_TRY(require(s, "copy_async"));
  if (bytes && (!dst || !src)) return invalid_argument("copy: dst and src must not be null");
  switch (s.backend()) {
    case backend_kind::host: return backend::host::copy_async(dst, src, bytes);
#if PK_ENABLE_CUDA
    case backend_kind::cuda:
      return backend::cuda::copy_async(s.ordinal(), dst, src, bytes, static_cast<int>(kind), s.native());
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip:
      return backend::hip::copy_async(s.ordinal(), dst, src, bytes, static_cast<int>(kind), s.native());
#endif
    default: (void)kind; return unsupported("copy: backend not built");
  }
}

status copy(const stream& s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
  PK_TRY(copy_async(s, dst, src, bytes, kind));
  return synchronize(s);
}

status memset_async(const stream& s, void* dst, int byte, std::size_t bytes) {
  PK_TRY(require(s, "memset_async"));
  if (bytes && !dst) return invalid_argument("memset: dst must not be null");
  switch (s.backend()) {
    case backend_kind::host: return backend::host::memset_async(dst, byte, bytes);
#if PK_ENABLE_CUDA
    case backend_kind::cuda: return backend::cuda::memset_async(s.ordinal(), dst, byte, bytes, s.native());
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip: return backend::hip::memset_async(s.ordinal(), dst, byte, bytes, s.native());
#endif
    default: return unsupported("memset: backend not built");
  }
}

// ---------------------------------------------------------------------------------------------
// Workspace: one growing buffer per (backend, device, native stream).

namespace {
struct workspace_registry {
  std::mutex mu;
  workspace_allocator user;
  struct entry {
    stream s;
    void* p = nullptr;
    std::size_t bytes = 0;
  };
  std::map<std::tuple<int, int, void*, int>, entry> buffers;  // (backend, ordinal, stream, kind)

  status release(entry& e) {
    if (!e.p) return {};
    status st;
    if (user.free)
      user.free(e.p, e.s, user.user);
    else
      st = device_free(e.s, e.p);
    e.p = nullptr;
    e.bytes = 0;
    return st;
  }
  ~workspace_registry() {
    // At exit the GPU runtime may already be torn down; freeing is best effort.
    for (auto& [k, e] : buffers) (void)release(e);
  }
};
workspace_registry& registry() {
  static workspace_registry r;
  return r;
}
}  // namespace

status set_workspace_allocator(const workspace_allocator& a) {
  if ((a.alloc == nullptr) != (a.free == nullptr))
    return invalid_argument("set_workspace_allocator: alloc and free must both be set or both be null");
  auto& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  for (auto& [k, e] : r.buffers) PK_TRY(r.release(e));
  r.buffers.clear();
  r.user = a;
  return {};
}

namespace detail {
namespace {
// One buffer per stream and kind (0: counters, zero between calls; 1: scratch data).
status stream_buffer(const stream& s, std::size_t bytes, int kind, void** out) {
  PK_TRY(require(s, "workspace"));
  auto& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  auto& e = r.buffers[{static_cast<int>(s.backend()), s.ordinal(), s.native(), kind}];
  if (e.bytes < bytes) {
    // The old buffer may still be in use by work enqueued on this stream: wait for it first.
    PK_TRY(synchronize(s));
    PK_TRY(r.release(e));
    e.s = s;
    const std::size_t grown = std::max(bytes, e.bytes * 2);
    if (r.user.alloc) {
      e.p = r.user.alloc(grown, s, r.user.user);
      if (!e.p) return {errc::out_of_memory, "workspace allocator hook returned null for " + std::to_string(grown) + " bytes"};
    } else {
      PK_TRY(device_malloc(s, grown, &e.p));
    }
    e.bytes = grown;
    PK_TRY(memset_async(s, e.p, 0, grown));
  }
  *out = e.p;
  return {};
}
}  // namespace

status stream_workspace(const stream& s, std::size_t bytes, void** out) { return stream_buffer(s, bytes, 0, out); }
status stream_scratch(const stream& s, std::size_t bytes, void** out) { return stream_buffer(s, bytes, 1, out); }
}  // namespace detail

}  // namespace pk
