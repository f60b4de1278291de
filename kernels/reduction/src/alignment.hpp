// Internal to the reduction family's entry points (reduce_api.cpp, norm_api.cpp): the alignment rule of
// every data pointer they take.
#pragma once
#include <pk/status.hpp>

#include <cstdint>
#include <sstream>
#include <string>

namespace pk::reduction::detail {

//! `p` must be a multiple of `bytes`, the size of the elements it points to: the kernels load and store
//! whole elements, which faults on a GPU and is undefined behaviour on the emulator when misaligned.
//! Null passes (the null checks are the callers'). `where` names the argument ("reduce: in").
inline status check_aligned(const std::string& where, const void* p, int bytes) {
  if (p == nullptr || reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0) return {};
  std::ostringstream o;
  o << where << ": address " << p << ": must be aligned to the element size (" << bytes << " bytes)";
  return invalid_argument(o.str());
}

}  // namespace pk::reduction::detail
