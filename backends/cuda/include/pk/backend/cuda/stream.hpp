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

//! Holds a stream's work until the host has enqueued it (the timer's gate): hold() makes the stream wait
//! (a 32-bit stream wait on a word of mapped, pinned host memory) until release() writes the word.
//! Everything enqueued in between then runs back to back, whatever the host's time per call. A device
//! or driver without stream memory operations fails init(), and the timer runs ungated.
class stream_gate {
 public:
  stream_gate() = default;
  stream_gate(const stream_gate&) = delete;
  stream_gate& operator=(const stream_gate&) = delete;
  ~stream_gate();
  pk::status init(int ordinal);
  pk::status hold(void* stream);
  //! Opens the gate held last; safe to call from another thread and more than once.
  void release() noexcept;

 private:
  void* word_ = nullptr;      //!< the host pointer of the mapped word
  void* device_word_ = nullptr;
  unsigned value_ = 0;        //!< the value the stream waits for (written by release())
};

}  // namespace pk::backend::cuda
