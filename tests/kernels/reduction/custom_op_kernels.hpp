// Declarations of the per-target user-operator instances (custom_op_kernels.cpp).
#pragma once
#include <pk/config.hpp>
#include <pk/runtime.hpp>

#include <cstdint>

namespace pk::test {
struct minmax {
  float lo, hi;
};
}  // namespace pk::test

#define PK_TEST_DECLARE_CUSTOM(t)                                                                        \
  namespace pk::t::test_custom {                                                                         \
  status minmax_reduce(const stream& s, const test::minmax* in, std::int64_t n, test::minmax* out, int policy); \
  status xor_reduce(const stream& s, const std::uint32_t* in, std::int64_t n, std::uint32_t* out);       \
  }
PK_DETAIL_FOR_EACH_TARGET(PK_TEST_DECLARE_CUSTOM)
#undef PK_TEST_DECLARE_CUSTOM
