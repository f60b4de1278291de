// CUDA backend: streams and events.
#pragma once
#include <pk/status.hpp>

namespace pk::backend::cuda {

pk::status synchronize(int ordinal, void* stream);
//! Whether `stream` is capturing a graph (work on it is recorded, not run).
pk::status is_capturing(int ordinal, void* stream, bool& out);

//! Event-timed region on a stream (benchmarks and the tuner): record(start) ... record(stop), then
//! elapsed_ms waits for stop.
class event_timer {
 public:
  event_timer() = default;
  event_timer(const event_timer&) = delete;
  event_timer& operator=(const event_timer&) = delete;
  ~event_timer();
  pk::status init(int ordinal);
  pk::status start(void* stream);
  pk::status stop(void* stream);
  pk::status elapsed_ms(float& ms);

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace pk::backend::cuda
