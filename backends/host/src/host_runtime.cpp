// Host emulator backend: memory and device impersonation.
#include <pk/backend/host/device.hpp>
#include <pk/backend/host/memory.hpp>

#include <cstring>
#include <new>
#include <string>

namespace pk::backend::host {

int device_count() noexcept { return 1; }

pk::status impersonate(std::string_view name, const archdb::device_desc** out) {
  const archdb::device_desc* d = archdb::find_device(name);
  if (!d)
    return {errc::not_found, "device \"" + std::string(name) +
                                 "\" is not in the architecture database (`pk devices` lists the names)"};
  *out = d;
  return {};
}

pk::status malloc_device(std::size_t bytes, void** out) {
  if (!out) return invalid_argument("malloc_device: out must not be null");
  *out = nullptr;
  if (bytes == 0) return {};
  void* p = ::operator new(bytes, std::align_val_t{device_alignment}, std::nothrow);
  if (!p) return {errc::out_of_memory, "host emulator: allocation of " + std::to_string(bytes) + " bytes failed"};
  *out = p;
  return {};
}

pk::status free_device(void* p) {
  if (p) ::operator delete(p, std::align_val_t{device_alignment});
  return {};
}

pk::status copy_async(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
  return {};
}

pk::status memset_async(void* dst, int byte, std::size_t bytes) {
  if (bytes) std::memset(dst, byte, bytes);
  return {};
}

}  // namespace pk::backend::host
