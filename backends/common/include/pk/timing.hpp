// pk's one way to time enqueued work, and the measurement behind PK_TUNING=tune.
//
// GPUs: events recorded on the stream around each repetition, the repetitions enqueued back to back (the
// host waits once per chunk of rounds, timing.cpp), so the device's time is measured, not the host's time
// to check, plan and launch a call. The emulator runs each launch to completion, so its figure is host wall-clock time of the
// emulation and says nothing about the impersonated device.
//
// PK_TUNING=tune: on a GPU stream, the first call of a family for a problem whose tuning-cache bucket has
// no measured winner times every fitting candidate on the call's own arguments (tune_on_miss), stores
// the fastest in the tuning cache (archdb/tuning_cache.hpp) and runs with it; later calls and processes
// adopt it without measuring. Such a first call waits for the GPU. Nothing is measured on the emulator,
// while the stream is capturing a graph, or for a forced policy.
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <functional>
#include <string>
#include <vector>

namespace pk {

struct timing {
  std::vector<double> us;  //!< one per timed repetition
  double median_us = 0, min_us = 0, max_us = 0;
  std::string clock;       //!< "cuda events", "hip events" or "host wall clock (emulator)"
};

//! Runs `work` `warmup` times untimed, then `reps` times, each timed on its own (time_interleaved of one work).
status time_work(const stream& s, int warmup, int reps, const std::function<status()>& work, timing& out);

//! Times several pieces of work against each other: each runs `warmup` times untimed, then `reps` rounds
//! time every work once, in turn (out[i]: work i's `reps` repetitions). A device whose clocks, temperature
//! or power state drift during the measurement then weighs on every work alike instead of on whichever ran
//! at that moment: timed one after the other, and even in rounds of five repetitions, one kernel was
//! measured 8% apart from itself in a `pk bench attention` row on the H200 (d128 s16k, 2026-12-03: its
//! repetitions spread over 3.27-3.97 ms).
status time_interleaved(const stream& s, int warmup, int reps, const std::vector<std::function<status()>>& works,
                        std::vector<timing>& out);

//! The median of `v` (the mean of the two middle values for an even count); 0 when empty.
double median(std::vector<double> v);

//! Whether `s` is capturing a graph (CUDA/HIP; the emulator never is).
status is_capturing(const stream& s, bool& out);

namespace detail {

//! PK_TUNING=tune's measurement (see the header comment). `p` is the family's plan, `family` and
//! `bucket` its tuning-cache key parts (archdb::tuning_key_of); `launch(i)` enqueues the call with
//! candidate i of p.all. When it measures, `index` becomes the fastest fitting candidate's, which is
//! stored; otherwise `index` is left as it is. A candidate that fails to launch is left out.
status tune_on_miss(const stream& s, const archdb::plan& p, const std::string& family, const std::string& bucket,
                    const std::function<status(int)>& launch, int& index);

}  // namespace detail
}  // namespace pk
