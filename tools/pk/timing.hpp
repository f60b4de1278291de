// pk command-line tool: timing of enqueued work. GPUs: events recorded on the stream around the work
// (no host synchronisation inside the timed region); the emulator runs each launch to completion, so
// its figure is host wall-clock time of the emulation and says nothing about the impersonated device.
#pragma once
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <functional>
#include <string>
#include <vector>

namespace pk::tool {

struct timing {
  std::vector<double> us;  //!< one per timed repetition
  double median_us = 0, min_us = 0, max_us = 0;
  std::string clock;       //!< "cuda events", "hip events" or "host wall clock (emulator)"
};

//! Runs `work` `warmup` times untimed, then `reps` times, each timed on its own.
status time_work(const stream& s, int warmup, int reps, const std::function<status()>& work, timing& out);

//! The median of `v` (the mean of the two middle values for an even count); 0 when empty.
double median(std::vector<double> v);

}  // namespace pk::tool
