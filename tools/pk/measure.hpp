// pk command-line tool: the candidate loop shared by `pk tune` and `pk bench`: each run (a candidate
// forced by index, or the library's own plan) is verified against the family's CPU reference, then all
// are timed together (pk/timing.hpp).
#pragma once
#include "family.hpp"
#include <pk/timing.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace pk::tool {

//! One measured run.
struct measured_run {
  int index = -1;           //!< candidate index in the plan; -1: the library's own plan
  std::string name;         //!< the candidate's name (for index -1: the planned candidate's)
  double predicted_us = 0;  //!< the model's prediction for it
  timing t;
  verification v;
};

//! Called before run k (0-based) of n is checked (`done` null), and for each run once all are timed.
using measure_progress = std::function<void(std::size_t k, std::size_t n, const std::string& name, const measured_run* done)>;

//! The fitting candidates of `model`, best predicted first (stable); only the first `top` when top > 0.
std::vector<int> rank_fitting(const archdb::plan& model, int top);

//! On a GPU, each entry is timed at least this long in all (more repetitions than asked for short runs),
//! with at most max_reps repetitions: the event timing of a ~10 us call spreads over 8-12 us on the H200,
//! and 25 repetitions left the plan 10% apart from the same kernel forced by name (sum bf16 2^22,
//! 2026-12-03).
inline constexpr double min_timed_us = 20000;
inline constexpr int max_reps = 1000;

//! Runs each entry of `order` on the prepared family `f`: i >= 0 forces candidate i of `model`, -1 runs
//! the library's own plan (`model`, which must have a fitting choice). First each run once on a poisoned
//! output, verified; then all of them timed interleaved (pk/timing.hpp: `warmup` untimed runs each, then
//! `reps` rounds of one timed run each; on a GPU more rounds when the first entry is short, see
//! min_timed_us), together with the `alongside` works (anchors), whose timings go to `alongside_t`. A
//! wrong result is reported in the run's verification, not as an error; errors (launch, backend) stop
//! the loop.
status measure_runs(family& f, const stream& s, const archdb::plan& model, const std::vector<int>& order, int warmup,
                    int reps, const measure_progress& progress, std::vector<measured_run>& out,
                    const std::vector<std::function<status()>>& alongside = {}, std::vector<timing>* alongside_t = nullptr);

}  // namespace pk::tool
