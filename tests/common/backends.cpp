#include "backends.hpp"

#include <pk/config.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>

namespace pk::test {

std::vector<backend_param> host_backends() {
  std::vector<backend_param> v;
  for (const code_target_info& t : code_targets)
    if (t.backend == backend_kind::host && t.built) v.push_back({t.name, t.device, false});
  return v;
}

std::vector<backend_param> all_backends() {
  std::vector<backend_param> v = host_backends();
  for (const code_target_info& t : code_targets)
    if (t.backend != backend_kind::host && t.built) v.push_back({t.name, "", true});
  return v;
}

bool make_stream(const backend_param& p, pk::stream& s, std::string& why_not) {
  if (p.gpu) {
    const bool hip = p.label == "hip";
    if ((hip ? hip_device_count() : cuda_device_count()) == 0) {
      why_not = std::string("no ") + (hip ? "HIP" : "CUDA") + " device present: GPU test skipped (run it on a machine with one)";
      return false;
    }
    const status st = hip ? stream::hip(nullptr, 0, s) : stream::cuda(nullptr, 0, s);
    if (!st) {
      why_not = st.to_string();
      return false;
    }
    return true;
  }
  const status st = stream::host(p.device, s);
  if (!st) {
    why_not = st.to_string();
    ADD_FAILURE() << "cannot make the emulator stream: " << why_not;
    return false;
  }
  return true;
}

std::string param_name(const ::testing::TestParamInfo<backend_param>& info) { return info.param.label; }

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    if (const char* e = std::getenv("PK_TEST_SEED")) return static_cast<std::uint64_t>(std::strtoull(e, nullptr, 0));
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }();
  return s;
}

}  // namespace pk::test
