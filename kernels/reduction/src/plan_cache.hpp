// Internal to the reduction dispatchers: a cache of planner choices. Planning costs 10-30 us of host
// time (candidate fits, occupancy, the `why` text), more than a small reduction takes on the GPU, so
// the dispatchers plan once per (device, operation, problem) and keep the choice. The key holds the
// exact problem sizes, so a call's plan never depends on earlier calls (deterministic bits).
#pragma once
#include <pk/archdb/planner.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace pk::reduction::detail {

//! What a dispatcher needs from a plan.
struct choice {
  int index = -1;                //!< chosen candidate, -1 if none fits
  int blocks_per_sm = 0;         //!< its occupancy
  std::uint32_t fits = 0;        //!< bit i: candidate i fits the device
  std::string why;               //!< the planner's explanation, kept only when nothing fits
  //! A plan with the fields the grid functions read (index, occupancy).
  [[nodiscard]] archdb::plan as_plan() const {
    archdb::plan p;
    p.index = index;
    p.occ.blocks_per_sm = blocks_per_sm;
    return p;
  }
};

enum class plan_kind : int { device, reproducible, segments, rows };

//! The cached choice of `make()` for (device, kind, elem_bytes, a, b, c).
choice cached_choice(const archdb::device_desc& d, plan_kind kind, int elem_bytes, std::int64_t a, std::int64_t b,
                     std::int64_t c, const std::function<archdb::plan()>& make);

}  // namespace pk::reduction::detail
