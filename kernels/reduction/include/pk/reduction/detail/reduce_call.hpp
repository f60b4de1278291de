// The type-erased arguments the dispatcher (compiled once) passes to the per-target launch code.
#pragma once
#include <pk/runtime.hpp>

#include <cstdint>

namespace pk::reduction {

struct reduce_call {
  const stream* s = nullptr;
  int policy = 0;       //!< index into reduce_candidates
  unsigned grid = 1;    //!< blocks
  const void* in = nullptr;
  std::int64_t n = 0;
  void* out = nullptr;
  void* partials = nullptr;     //!< grid accumulators (workspace)
  unsigned* ticket = nullptr;   //!< zero between calls (workspace)
  const char* type_name = "";   //!< "f32": part of the instance name
};

}  // namespace pk::reduction

namespace pk {
inline namespace PK_DETAIL_TARGET_NS {
namespace impl {
using reduction::reduce_call;
}
}  // namespace PK_DETAIL_TARGET_NS
}  // namespace pk
