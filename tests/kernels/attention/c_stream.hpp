// The attention C API tests' stream: a pk_stream_t on the device of a C++ stream (the emulator impersonating
// the same device, or the same GPU stream), destroyed with the test.
#pragma once
#include <pk/pk.h>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

namespace pk::test {

struct c_stream {
  pk_stream_t h = nullptr;
  ~c_stream() { (void)pk_stream_destroy(h); }
};
inline status make_c_stream(const stream& s, c_stream& out) {
  pk_status st = PK_ERROR_INTERNAL;
  switch (s.backend()) {
    case backend_kind::host: st = pk_stream_create_host(s.device().name.c_str(), &out.h); break;
    case backend_kind::cuda: st = pk_stream_create_cuda(s.native(), s.ordinal(), &out.h); break;
    case backend_kind::hip: st = pk_stream_create_hip(s.native(), s.ordinal(), &out.h); break;
  }
  return st == PK_SUCCESS ? status{} : status{errc::internal, pk_last_error_message()};
}

}  // namespace pk::test
