// Built against the installed pk: a reduction on each emulated arch family, checked exactly.
#include <pk/config.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/runtime.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {
// Ragged length; values are multiples of 1/8 below 2, so every fp32 partial sum is exact.
constexpr std::int64_t n = 65537;

pk::status sum_on(const char* device, float& result) {
  pk::stream s;
  PK_TRY(pk::stream::host(device, s));
  std::vector<float> h(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i % 13) * 0.125f;
  pk::device_buffer<float> x, out;
  PK_TRY(x.allocate(s, h.size()));
  PK_TRY(out.allocate(s, 1));
  PK_TRY(x.upload(h));
  PK_TRY(pk::reduce_sum(s, x.data(), n, out.data()));
  PK_TRY(pk::synchronize(s));
  std::vector<float> r;
  PK_TRY(out.download(r));
  result = r.at(0);
  return {};
}
}  // namespace

int main() {
  double expected = 0;
  for (std::int64_t i = 0; i < n; ++i) expected += static_cast<double>(i % 13) * 0.125;
  std::printf("pk %s\n", PK_VERSION_STRING);
  int failures = 0;
  for (const char* device : {"A100-SXM4-80GB", "MI300X", "RX 7900 XTX"}) {
    float got = 0;
    if (auto st = sum_on(device, got); !st) {
      std::printf("%s: %s\n", device, st.to_string().c_str());
      ++failures;
    } else if (static_cast<double>(got) != expected) {
      std::printf("%s: sum %.3f, expected %.3f\n", device, static_cast<double>(got), expected);
      ++failures;
    } else {
      std::printf("%s: sum %.3f ok\n", device, static_cast<double>(got));
    }
  }
  // Errors are values: a bad call returns a status naming the argument.
  pk::stream s;
  if (auto st = pk::reduce_sum(s, nullptr, 1, static_cast<float*>(nullptr)); st.ok()) {
    std::printf("reduce_sum on an uninitialized stream succeeded\n");
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}
