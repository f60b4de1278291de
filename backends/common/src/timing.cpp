// Event timing over the built backends, and PK_TUNING=tune's measurement (pk/timing.hpp).
#include <pk/archdb/family_plan.hpp>
#include <pk/archdb/tuning_cache.hpp>
#include <pk/config.hpp>
#include <pk/timing.hpp>

#if PK_ENABLE_CUDA
#include <pk/backend/cuda/stream.hpp>
#endif
#if PK_ENABLE_HIP
#include <pk/backend/hip/stream.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace pk {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

namespace {
// How the timed runs are enqueued. The stream is held (the backend's stream_gate) while the host enqueues a
// chunk of rounds, each run between its two events, and released when the chunk is in: the device then runs
// the chunk back to back, a run's start event firing when the run before it ends, so neither the host's time
// per call (argument checks, planning, the launch) nor a neighbour's host time is timed. Timed one at a time
// (record, launch, record, wait), a ~10 us call measured 8.9-12 us on the H200 (sum f32 2^20, 2026-12-03);
// enqueued back to back but ungated, the run after an anchor with a slow host side (CUB's dispatch) started on
// an idle device and measured 20% above the same kernel elsewhere in the round.
// The chunk is bounded in runs so that the stream's queue of pending work never fills while held (a full
// queue blocks the host's next launch, which would wait for the gate); a watchdog opens the gate if the
// host has not finished a chunk after gate_timeout (a run that waits for its own stream, say), and the rest
// is then timed ungated, which the timing's clock says.
constexpr int runs_per_chunk = 128;
constexpr auto gate_timeout = std::chrono::seconds(2);

//! Holds the stream for one chunk: opens the gate after gate_timeout unless open() came first, and in any
//! case when it goes out of scope (a run that failed or threw), so that the stream never stays held.
template <class Gate>
class held_chunk {
 public:
  explicit held_chunk(Gate& g) : gate_(g), watchdog_([this] {
    std::unique_lock<std::mutex> lock(m_);
    if (!cv_.wait_for(lock, gate_timeout, [this] { return done_; })) {
      timed_out_ = true;
      gate_.release();
    }
  }) {}
  held_chunk(const held_chunk&) = delete;
  held_chunk& operator=(const held_chunk&) = delete;
  ~held_chunk() { open(); }
  //! Opens the gate (every run of the chunk is enqueued); whether the watchdog had to open it first.
  bool open() {
    if (watchdog_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(m_);
        done_ = true;
      }
      cv_.notify_one();
      watchdog_.join();
      gate_.release();
    }
    return timed_out_;
  }

 private:
  Gate& gate_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false, timed_out_ = false;
  std::thread watchdog_;  // last: started once the members it reads exist
};

template <class Timer, class Gate>
status time_gated(const stream& s, int reps, const std::vector<std::function<status()>>& works,
                  std::vector<timing>& out) {
  const std::size_t n = works.size();
  if (n == 0 || reps <= 0) return {};
  const int chunk = std::clamp(runs_per_chunk / static_cast<int>(n), 1, reps);
  const std::unique_ptr<Timer[]> timers(new Timer[static_cast<std::size_t>(chunk) * n]);
  for (std::size_t k = 0; k < static_cast<std::size_t>(chunk) * n; ++k) PK_TRY(timers[k].init(s.ordinal()));
  Gate gate;
  const status gate_st = gate.init(s.ordinal());
  bool gated = static_cast<bool>(gate_st);
  std::string why_ungated = gated ? "" : "the gate could not be set up: " + gate_st.message();
  for (int r0 = 0; r0 < reps; r0 += chunk) {
    const int rounds = std::min(chunk, reps - r0);
    const bool held = gated && static_cast<bool>(gate.hold(s.native()));
    if (gated && !held) {
      gated = false;
      why_ungated = "the stream wait failed";
    }
    std::optional<held_chunk<Gate>> hc;
    if (held) {
      try {
        hc.emplace(gate);
      } catch (...) {  // no watchdog thread: open the gate now, time this chunk and the rest ungated
        gate.release();
        gated = false;
        why_ungated = "the watchdog thread could not be started";
      }
    }
    status st;
    for (int r = 0; r < rounds && st; ++r)
      for (std::size_t i = 0; i < n && st; ++i) {
        Timer& t = timers[static_cast<std::size_t>(r) * n + i];
        st = t.start(s.native());
        if (st) st = works[i]();
        if (st) st = t.stop(s.native());
      }
    if (hc && hc->open()) {
      gated = false;
      why_ungated = "a chunk took the host over 2 s to enqueue";
    }
    if (!st) {
      (void)synchronize(s);  // the stream past the gate's word before the gate (and the word) goes away
      return st;
    }
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < n; ++i) {
        float ms = 0;
        PK_TRY(timers[static_cast<std::size_t>(r) * n + i].elapsed_ms(ms));
        out[i].us.push_back(static_cast<double>(ms) * 1e3);
      }
  }
  if (!why_ungated.empty())
    for (auto& t : out) t.clock += " (runs not held for enqueueing: " + why_ungated + ")";
  return {};
}

void summarize(timing& t) {
  t.median_us = median(t.us);
  t.min_us = t.max_us = 0;
  if (!t.us.empty()) {
    const auto [lo, hi] = std::minmax_element(t.us.begin(), t.us.end());
    t.min_us = *lo;
    t.max_us = *hi;
  }
}
}  // namespace

status time_work(const stream& s, int warmup, int reps, const std::function<status()>& work, timing& out) {
  std::vector<timing> t;
  PK_TRY(time_interleaved(s, warmup, reps, {work}, t));
  out = std::move(t.front());
  return {};
}

status time_interleaved(const stream& s, int warmup, int reps, const std::vector<std::function<status()>>& works,
                        std::vector<timing>& out) {
  if (reps < 0 || warmup < 0) return invalid_argument("time_interleaved: warmup and reps must be >= 0");
  out.assign(works.size(), timing{});
  for (const auto& w : works)
    for (int k = 0; k < warmup; ++k) PK_TRY(w());
  PK_TRY(synchronize(s));
  switch (s.backend()) {
#if PK_ENABLE_CUDA
    case backend_kind::cuda:
      for (auto& t : out) t.clock = "cuda events";
      PK_TRY((time_gated<backend::cuda::event_timer, backend::cuda::stream_gate>(s, reps, works, out)));
      break;
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip:
      for (auto& t : out) t.clock = "hip events";
      PK_TRY((time_gated<backend::hip::event_timer, backend::hip::stream_gate>(s, reps, works, out)));
      break;
#endif
    default:
      for (auto& t : out) t.clock = "host wall clock (emulator)";
      for (int r = 0; r < reps; ++r)
        for (std::size_t i = 0; i < works.size(); ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          PK_TRY(works[i]());
          PK_TRY(synchronize(s));
          out[i].us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
  }
  for (auto& t : out) summarize(t);
  return {};
}

status is_capturing(const stream& s, bool& out) {
  out = false;
  switch (s.backend()) {
#if PK_ENABLE_CUDA
    case backend_kind::cuda: return backend::cuda::is_capturing(s.ordinal(), s.native(), out);
#endif
#if PK_ENABLE_HIP
    case backend_kind::hip: return backend::hip::is_capturing(s.ordinal(), s.native(), out);
#endif
    default: return {};
  }
}

namespace detail {

// Repetitions per candidate: one untimed launch (module load, first touch; it also finds the candidates
// that launch) and the median of five timed runs, interleaved over the candidates: enough to rank
// candidates whose times differ by a few percent (the ranking `pk tune` stores uses more).
constexpr int tune_reps = 5;

status tune_on_miss(const stream& s, const archdb::plan& p, const std::string& family, const std::string& bucket,
                    const std::function<status(int)>& launch, int& index) {
  if (archdb::tuning_mode_from_env() != archdb::tuning_mode::tune || p.from_tuning_cache || bucket.empty()) return {};
  if (s.backend() == backend_kind::host) return {};
  bool capturing = false;
  PK_TRY(is_capturing(s, capturing));
  if (capturing) return {};
  int fitting = 0;
  for (const auto& c : p.all) fitting += c.fits ? 1 : 0;
  if (fitting < 2) return {};

  // Candidates that launch, then all of them timed interleaved (time_interleaved says why).
  std::vector<int> ok;
  std::vector<std::function<status()>> works;
  for (std::size_t i = 0; i < p.all.size(); ++i) {
    if (!p.all[i].fits) continue;
    const int candidate = static_cast<int>(i);
    if (!launch(candidate) || !synchronize(s)) continue;
    ok.push_back(candidate);
    works.emplace_back([&launch, candidate] { return launch(candidate); });
  }
  std::vector<timing> t;
  int best = -1;
  double best_us = std::numeric_limits<double>::infinity();
  if (!works.empty() && time_interleaved(s, 0, tune_reps, works, t))
    for (std::size_t k = 0; k < ok.size(); ++k)
      if (t[k].median_us < best_us) {
        best_us = t[k].median_us;
        best = ok[k];
      }
  if (best < 0) return {};  // every candidate failed: the call's own launch reports why
  archdb::tuning_entry e;
  e.winner = p.all[static_cast<std::size_t>(best)].name;
  e.measured_us = best_us;
  // A cache that cannot be written (read-only home, no path) still gives this call the winner; the plan
  // cache is dropped so that the next call plans again and adopts the stored winner.
  (void)archdb::tuning_cache::instance().store(archdb::tuning_key_of(s.device(), family, p, bucket), e, nullptr);
  archdb::clear_plan_cache();
  index = best;
  return {};
}

}  // namespace detail
}  // namespace pk
