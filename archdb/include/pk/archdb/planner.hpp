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
#include "pk/archdb/tuning_cache.hpp"

namespace pk::archdb {

//! One compiled kernel instance the planner may pick.
struct candidate {
  std::string name;             //!< policy name, e.g. "attn_fwd_bf16_d128_b128x64_w4_s2"
  kernel_resources res;
  bool declares_spills = false; //!< the family accepts register spills for this candidate
  int spill_bytes = 0;          //!< spill bytes per thread from the compiler report
  std::string unavailable;      //!< non-empty: why it cannot run on the device (an instruction its arch lacks)
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
  int param = 0;  //!< a family's runtime parameter planned with the candidate (decode: key splits); 0: none
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
    int param = 0;             //!< the cost function's runtime parameter for this candidate (cost_estimate::param)
    kernel_resources res;      //!< the candidate's resources as given to choose()
    occupancy_result occ;      //!< its occupancy on the device (blocks_per_sm 0 when it does not fit)
  };
  std::vector<considered> all;  //!< one entry per candidate, in input order
  bool from_tuning_cache = false;  //!< the choice is a measured winner (adopt_cached_winner), not the model's
};

//! Cost function signature.
using cost_function = std::function<cost_estimate(const candidate&, const occupancy_result&)>;

//! Picks the fitting candidate with the lowest predicted time (ties: the earlier candidate, so the
//! family's default-first order decides). `why` names the device, the chosen candidate, its occupancy and
//! limiter, the cost explanation, and every rejected or slower candidate with its reason. A candidate whose
//! name repeats an earlier one's does not fit (names are how plans are forced and cached).
plan choose(const device_desc& d, std::span<const candidate> candidates, const cost_function& cost);

//! Identity of a candidate list for tuning-cache keys: "<count>x<FNV-1a 64 of the names, hex>". A build
//! with other candidates (added, removed, renamed or reordered) gets another identity, so its cached
//! winners are not reused.
std::string candidate_set_id(std::span<const std::string> names);

//! Problem bucket of a size-driven family: "log2n<floor(log2 n)>_e<elem_bytes>" (n = 0 is bucket 0).
std::string size_bucket(std::int64_t n, int elem_bytes);

//! The tuning-cache key of plan `p` (made by choose() for `family` on `d`): {device_identity(d), family,
//! candidate_set_id(names of p.all), bucket}.
tuning_key tuning_key_of(const device_desc& d, const std::string& family, const plan& p, const std::string& bucket);

//! Makes the cached winner `e` the choice of `p` (a plan choose() made on `d`) when it names a candidate
//! of p.all that fits `d`: index, name, occupancy and predicted time (the measured one) follow it,
//! from_tuning_cache is set and `why` starts with "from tuning cache: ...". Returns false and leaves `p`
//! unchanged when the winner is unknown or does not fit (a stale entry never selects a bad plan).
bool adopt_cached_winner(const device_desc& d, const tuning_entry& e, plan& p);

//! The family entry points' hook: unless $PK_TUNING is "off", looks up tuning_key_of(d, family, p,
//! bucket) in tuning_cache::instance() and adopts a hit (adopt_cached_winner). Never measures. Returns
//! true when the plan now comes from the cache.
bool apply_tuning_cache(const device_desc& d, const std::string& family, const std::string& bucket, plan& p);

//! Roofline time in microseconds: max(bytes / bandwidth, flops / peak). A non-positive `peak_tflops`
//! or unknown bandwidth drops that term.
double roofline_us(const device_desc& d, double bytes, double flops, double peak_tflops);

//! Number of waves of `blocks` blocks over the device's occupancy units at occ.blocks_per_sm (ceil);
//! 0 when the kernel cannot launch.
std::int64_t waves(const device_desc& d, std::int64_t blocks, const occupancy_result& occ);

//! Fraction of the last wave's slots that are busy, in (0, 1]: blocks / (waves * slots per wave).
double wave_efficiency(const device_desc& d, std::int64_t blocks, const occupancy_result& occ);

}  // namespace pk::archdb
