// Host emulator backend: streams are in-order and synchronous; timers use the steady clock.
#pragma once
#include <pk/status.hpp>

#include <chrono>

namespace pk::backend::host {

inline pk::status synchronize() { return {}; }

class event_timer {
 public:
  pk::status init(int) { return {}; }
  pk::status start(void*) {
    t0_ = std::chrono::steady_clock::now();
    return {};
  }
  pk::status stop(void*) {
    t1_ = std::chrono::steady_clock::now();
    return {};
  }
  pk::status elapsed_ms(float& ms) {
    ms = std::chrono::duration<float, std::milli>(t1_ - t0_).count();
    return {};
  }

 private:
  std::chrono::steady_clock::time_point t0_, t1_;
};

}  // namespace pk::backend::host
