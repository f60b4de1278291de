// pk from C++: a device-wide sum and an attention forward pass on the default stream (the GPU when the
// build has one and a device is present, otherwise the emulator), then on the emulator impersonating
// other devices. Each result is checked against a CPU reference.
//
//   cmake -S examples/cpp -B build/example-cpp -DCMAKE_PREFIX_PATH=<pk prefix>
//   cmake --build build/example-cpp && build/example-cpp/pk_example_cpp
#include "attention_check.hpp"

#include <pk/reduction/reduce.hpp>
#include <pk/runtime.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

// Sum of `x` on `s`, in fp32 on the device.
pk::status device_sum(const pk::stream& s, const std::vector<float>& x, float& result) {
  pk::device_buffer<float> in, out;
  PK_TRY(in.allocate(s, x.size()));
  PK_TRY(out.allocate(s, 1));
  PK_TRY(in.upload(x));
  PK_TRY(pk::reduce_sum(s, in.data(), static_cast<std::int64_t>(x.size()), out.data()));
  std::vector<float> h;
  PK_TRY(out.download(h));  // waits for the stream
  result = h.at(0);
  return {};
}

}  // namespace

int main() {
  constexpr std::size_t n = 1 << 20;
  std::mt19937 gen(2024);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(n);
  double reference = 0, magnitude = 0;
  for (float& v : x) {
    v = dist(gen);
    reference += v;
    magnitude += std::fabs(v);
  }
  // fp32 accumulation error grows at most like n * eps * sum|x| for any summation order.
  const double tolerance = static_cast<double>(n) * 0x1p-24 * magnitude;

  pk::stream def;
  if (auto st = pk::default_stream(def); !st) {
    std::fprintf(stderr, "default_stream: %s\n", st.to_string().c_str());
    return 1;
  }
  int failures = 0;
  std::vector<pk::stream> streams{def};
  for (const char* device : {"RTX 3090", "MI300X"}) {
    pk::stream s;
    if (auto st = pk::stream::host(device, s); !st) {
      std::fprintf(stderr, "stream::host(%s): %s\n", device, st.to_string().c_str());
      return 1;
    }
    streams.push_back(s);
  }
  for (const pk::stream& s : streams) {
    float sum = 0;
    if (auto st = device_sum(s, x, sum); !st) {
      std::fprintf(stderr, "%s: %s\n", s.describe().c_str(), st.to_string().c_str());
      ++failures;
      continue;
    }
    const double error = std::fabs(static_cast<double>(sum) - reference);
    std::printf("%-50s sum = %.6f (reference %.6f, |error| %.2e, bound %.2e)\n", s.describe().c_str(),
                static_cast<double>(sum), reference, error, tolerance);
    if (error > tolerance) ++failures;
  }

  // Attention (attention.cpp).
  failures += attention_checks(streams, gen);

  // Errors are values: the status names the argument and the rule.
  if (auto st = pk::reduce_sum(def, x.data(), -1, static_cast<float*>(nullptr)); !st) std::printf("a bad call returns: %s\n", st.to_string().c_str());
  return failures == 0 ? 0 : 1;
}
