// pk::archdb — resource-fit checks and the planner framework. Host-only.
//
// A kernel family supplies its candidate list (resources per candidate, from the compiler's report) and a
// cost function; choose() filters by fit, computes occupancy, ranks by predicted time and explains why.
//
//! Usage:
//! \code
//!   std::vector<pk::archdb::candidate> c = {{"b128x64_w4", {128, 96, 0, 96 * 1024}},
//!                                           {"b64x64_w4", {128, 96, 0, 48 * 1024}}};
//!   auto p = pk::archdb::choose(dev, c, [&](const pk::archdb::candidate& x, const pk::archdb::occupancy_result& o) {
//!     return pk::archdb::cost_estimate{pk::archdb::roofline_us(dev, bytes, flops, dev.peak_bf16_tflops), "roofline"};
//!   });
//!   std::puts(p.why.c_str());
//! \endcode
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "pk/archdb/device.hpp"
#include "pk/archdb/occupancy.hpp"

namespace pk::archdb {

//! One compiled kernel instance the planner may pick.
struct candidate {
  std::string name;             //!< policy name, e.g. "attn_fwd_bf16_d128_b128x64_w4_s2"
  kernel_resources res;
  bool declares_spills = false; //!< the family accepts register spills for this candidate
  int spill_bytes = 0;          //!< spill bytes per thread from the compiler report
};

//! Whether a candidate can run on a device; `reason` names the binding limit and both numbers.
struct fit_result {
  bool fits = false;
  std::string reason;
};

//! Checks threads, registers / VGPRs (incl. AGPRs), SGPRs, shared memory / LDS (incl. the per-block
//! reserve and allocation granularity, against the per-block opt-in limit and the per-SM capacity), the
//! static shared-memory limit, and undeclared spills.
fit_result check_fit(const device_desc& d, const candidate& c);

//! A cost function's answer: predicted time and a short explanation.
struct cost_estimate {
  double predicted_us = 0;
  std::string why;
};

//! The planner's choice. index == -1 when no candidate fits.
struct plan {
  int index = -1;
  std::string name;
  occupancy_result occ;
  double predicted_us = 0;
  std::string why;
  struct considered {
    std::string name;
    bool fits = false;
    std::string reason;  //!< fit failure, or occupancy and the cost function's explanation
    double predicted_us = 0;
  };
  std::vector<considered> all;  //!< one entry per candidate, in input order
};

//! Cost function signature.
using cost_function = std::function<cost_estimate(const candidate&, const occupancy_result&)>;

//! Picks the fitting candidate with the lowest predicted time (ties: the earlier candidate, so the
//! family's default-first order decides). `why` names the device, the chosen candidate, its occupancy and
//! limiter, the cost explanation, and every rejected or slower candidate with its reason.
plan choose(const device_desc& d, std::span<const candidate> candidates, const cost_function& cost);

//! Roofline time in microseconds: max(bytes / bandwidth, flops / peak). A non-positive `peak_tflops`
//! or unknown bandwidth drops that term.
double roofline_us(const device_desc& d, double bytes, double flops, double peak_tflops);

//! Number of waves of `blocks` blocks over the device's occupancy units at occ.blocks_per_sm (ceil);
//! 0 when the kernel cannot launch.
std::int64_t waves(const device_desc& d, std::int64_t blocks, const occupancy_result& occ);

//! Fraction of the last wave's slots that are busy, in (0, 1]: blocks / (waves * slots per wave).
double wave_efficiency(const device_desc& d, std::int64_t blocks, const occupancy_result& occ);

}  // namespace pk::archdb
