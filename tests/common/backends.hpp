// Tests are written once and run on every backend: the emulator impersonating one device per built
// host target (wave32 NVIDIA, wave64 CDNA, wave32 RDNA) and the GPU when one is present.
#pragma once
#include <pk/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace pk::test {

struct backend_param {
  std::string label;   //!< test-name suffix: host_sm80, host_gfx942, host_gfx1100, cuda
  std::string device;  //!< archdb device impersonated (host) or "" (GPU)
  bool gpu = false;
};
//! gtest prints parameters in test names and failure messages: the label, not the object's bytes.
inline void PrintTo(const backend_param& p, std::ostream* os) { *os << p.label; }

//! Every backend of this build (GPU entries are listed even without a GPU: they skip with a message).
std::vector<backend_param> all_backends();
//! Only the emulator backends.
std::vector<backend_param> host_backends();
//! Makes a stream for `p`; returns false (and the test should GTEST_SKIP) when the GPU is absent.
bool make_stream(const backend_param& p, pk::stream& s, std::string& why_not);
std::string param_name(const ::testing::TestParamInfo<backend_param>& info);

//! The seed of this test run: $PK_TEST_SEED or a fresh random one; printed by every test that uses it.
std::uint64_t seed();

#define PK_TEST_STREAM(param, s)                                  \
  pk::stream s;                                                   \
  {                                                               \
    std::string pk_why_not_;                                      \
    if (!pk::test::make_stream(param, s, pk_why_not_)) GTEST_SKIP() << pk_why_not_; \
  }

}  // namespace pk::test
