#include "timing.hpp"

#include <pk/config.hpp>
#if PK_ENABLE_CUDA
#include <pk/backend/cuda/stream.hpp>
#endif
#if PK_ENABLE_HIP
#include <pk/backend/hip/stream.hpp>
#endif

#include <algorithm>
#include <chrono>

namespace pk::tool {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

namespace {
template <class Timer>
status time_with_events(const stream& s, int reps, const std::function<status()>& work, timing& out) {
  Timer t;
  PK_TRY(t.init(s.ordinal()));
  for (int r = 0; r < reps; ++r) {
    PK_TRY(t.start(s.native()));
    PK_TRY(work());
    PK_TRY(t.stop(s.native()));
    float ms = 0;
    PK_TRY(t.elapsed_ms(ms));
    out.us.push_back(static_cast<double>(ms) * 1e3);
  }
  return {};
}
}  // namespace

status time_work(const stream& s, int warmup, int reps, const std::function<status()>& work, timing& out) {
  out = {};
  for (int w = 0; w < warmup; ++w) PK_TRY(work());
  PK_TRY(synchronize(s));
  switch (s.backend()) {
#if PK_ENABLE_CUDA
    case backend_kind::cuda:
      out.clock = "cuda events";
      PK_TRY(time_with_events<backend::cuda::event_timer>(s, reps, work, out));
      break;
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip:
      out.clock = "hip events";
      PK_TRY(time_with_events<backend::hip::event_timer>(s, reps, work, out));
      break;
#endif
    default:
      out.clock = "host wall clock (emulator)";
      for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        PK_TRY(work());
        PK_TRY(synchronize(s));
        out.us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
  }
  out.median_us = median(out.us);
  if (!out.us.empty()) {
    const auto [lo, hi] = std::minmax_element(out.us.begin(), out.us.end());
    out.min_us = *lo;
    out.max_us = *hi;
  }
  return {};
}

}  // namespace pk::tool
