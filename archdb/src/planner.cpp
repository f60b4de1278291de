// pk::archdb — resource fit and the planner framework.
#include "pk/archdb/planner.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace pk::archdb {
namespace {

std::int64_t align_to(std::int64_t v, std::int64_t g) { return g > 0 ? (v + g - 1) / g * g : v; }

fit_result no(std::string why) { return {false, std::move(why)}; }

std::string fmt_us(double us) {
  std::ostringstream o;
  o.precision(4);
  o << us << " us";
  return o.str();
}

}  // namespace

fit_result check_fit(const device_desc& d, const candidate& c) {
  const auto& k = c.res;
  const std::string on = " on " + d.name;
  if (!c.unavailable.empty()) return no(c.unavailable + on);
  if (c.spill_bytes > 0 && !c.declares_spills)
    return no("register spills " + std::to_string(c.spill_bytes) + " B per thread not declared by the candidate" + on);
  if (k.threads_per_block <= 0 || k.threads_per_block > d.max_threads_per_block)
    return no("threads per block " + std::to_string(k.threads_per_block) + " > " + std::to_string(d.max_threads_per_block) + on);
  const std::int64_t smem = k.static_smem + k.dynamic_smem;

  if (d.vendor_id == vendor::nvidia) {
    if (d.max_regs_per_thread > 0 && k.regs_per_thread > d.max_regs_per_thread)
      return no("registers " + std::to_string(k.regs_per_thread) + " per thread > " + std::to_string(d.max_regs_per_thread) + on);
    if (k.regs_per_thread > 0 && d.regs_per_block > 0) {
      const int smsp = std::max(1, d.smsp_per_sm);
      const std::int64_t W = (k.threads_per_block + d.warp_size - 1) / d.warp_size;
      const std::int64_t regs_warp = align_to(std::int64_t{k.regs_per_thread} * d.warp_size, d.reg_alloc_unit);
      const std::int64_t per_block = regs_warp * align_to(W, smsp);
      if (per_block > d.regs_per_block)
        return no("registers " + std::to_string(per_block) + " per block (" + std::to_string(regs_warp) + " per warp x " +
                  std::to_string(align_to(W, smsp)) + " warps) > " + std::to_string(d.regs_per_block) + on);
    }
    if (d.smem_per_block > 0 && k.static_smem > d.smem_per_block)
      return no("static shared memory " + std::to_string(k.static_smem) + " B > " + std::to_string(d.smem_per_block) +
                " B static limit" + on + " (move it to dynamic shared memory with opt-in)");
  } else {
    if (d.max_arch_vgprs > 0 && k.regs_per_thread > d.max_arch_vgprs)
      return no("VGPRs " + std::to_string(k.regs_per_thread) + " > " + std::to_string(d.max_arch_vgprs) + " ArchVGPRs" + on);
    if (k.agprs > d.agprs_per_lane)
      return no("AGPRs " + std::to_string(k.agprs) + " > " + std::to_string(d.agprs_per_lane) + on);
    const std::int64_t agpr_align = 4;  // AGPRs start at a 4-aligned offset [LLVM getTotalNumVGPRs]
    const std::int64_t V = k.agprs > 0 ? align_to(k.regs_per_thread, agpr_align) + k.agprs : k.regs_per_thread;
    if (V > d.vgprs_per_simd_lane)
      return no("VGPRs " + std::to_string(V) + " (arch + AGPR) > " + std::to_string(d.vgprs_per_simd_lane) + " per lane" + on);
    if (d.max_sgprs > 0 && k.sgprs > d.max_sgprs)
      return no("SGPRs " + std::to_string(k.sgprs) + " > " + std::to_string(d.max_sgprs) + on);
  }

  // Shared memory / LDS: allocation = roundup(bytes + reserve, granularity), against the per-block
  // (opt-in) limit and the per-SM capacity.
  const std::int64_t alloc = align_to(smem + d.smem_reserved_per_block, d.smem_alloc_granularity);
  const char* what = d.vendor_id == vendor::nvidia ? "shared memory " : "LDS ";
  const std::string detail = std::to_string(smem) + " B (+" + std::to_string(d.smem_reserved_per_block) +
                             " reserved, granularity " + std::to_string(d.smem_alloc_granularity) + ")";
  if (alloc > d.smem_per_block_optin + d.smem_reserved_per_block)
    return no(what + detail + " > " + std::to_string(d.smem_per_block_optin) + " B per block" + on);
  if (alloc > d.smem_per_sm)
    return no(what + detail + " > " + std::to_string(d.smem_per_sm) + " B per " +
              (d.vendor_id == vendor::nvidia ? "SM" : "CU") + on);

  const occupancy_result occ = occupancy(d, k);
  if (occ.blocks_per_sm <= 0) return no("cannot launch" + on + ": " + occ.detail);
  std::ostringstream ok;
  ok << "fits" << on << ": " << occ.blocks_per_sm << " blocks/SM, limited by " << occ.limiter;
  if (c.spill_bytes > 0) ok << "; declared spills " << c.spill_bytes << " B per thread";
  return {true, ok.str()};
}

plan choose(const device_desc& d, std::span<const candidate> cands, const cost_function& cost) {
  plan p;
  double best = 0;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const auto& c = cands[i];
    plan::considered e;
    e.name = c.name;
    e.res = c.res;
    // Candidates are forced and cached by name: a second one of the same name could never be run.
    const bool repeated = std::any_of(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(i),
                                      [&](const candidate& o) { return o.name == c.name; });
    const fit_result f =
        repeated ? fit_result{false, "its name repeats an earlier candidate's (a forced or cached name runs the first)"}
                 : check_fit(d, c);
    e.fits = f.fits;
    if (!f.fits) {
      e.reason = f.reason;
      p.all.push_back(std::move(e));
      continue;
    }
    const occupancy_result occ = occupancy(d, c.res);
    e.occ = occ;
    cost_estimate ce;
    if (cost) ce = cost(c, occ);
    e.predicted_us = ce.predicted_us;
    e.param = ce.param;
    std::ostringstream r;
    r << occ.blocks_per_sm << " blocks/SM (" << occ.occupancy * 100.0 << "% occupancy, limited by " << occ.limiter
      << "), predicted " << fmt_us(ce.predicted_us);
    if (!ce.why.empty()) r << " (" << ce.why << ")";
    e.reason = r.str();
    if (!std::isfinite(ce.predicted_us)) {
      e.fits = false;
      e.reason = "cost function returned a non-finite time; " + e.reason;
    } else if (p.index < 0 || ce.predicted_us < best) {
      p.index = static_cast<int>(i);
      best = ce.predicted_us;
      p.name = c.name;
      p.occ = occ;
      p.predicted_us = ce.predicted_us;
    }
    p.all.push_back(std::move(e));
  }

  std::ostringstream w;
  if (p.index < 0) {
    w << "no candidate fits " << d.name << ":";
    for (const auto& e : p.all) w << "\n  - " << e.name << ": " << e.reason;
    if (p.all.empty()) w << " the candidate list is empty";
  } else {
    const auto& chosen = p.all[static_cast<std::size_t>(p.index)];
    w << "chose " << p.name << " on " << d.name << " (" << name_of(d.isa) << ", " << d.sm_count
      << (d.vendor_id == vendor::nvidia ? " SMs" : " CUs") << "): " << chosen.reason;
    for (std::size_t i = 0; i < p.all.size(); ++i) {
      if (static_cast<int>(i) == p.index) continue;
      const auto& e = p.all[i];
      w << "\n  - " << e.name << (e.fits ? ": slower, " : ": rejected, ") << e.reason;
    }
  }
  p.why = w.str();
  return p;
}

std::string candidate_set_id(std::span<const std::string> names) {
  // FNV-1a, 64 bit (offset basis and prime of the published algorithm); names are separated by a NUL so
  // that {"ab","c"} and {"a","bc"} differ.
  std::uint64_t h = 14695981039346656037ull;
  const auto mix = [&h](unsigned char byte) {
    h ^= byte;
    h *= 1099511628211ull;
  };
  for (const auto& n : names) {
    for (const char ch : n) mix(static_cast<unsigned char>(ch));
    mix(0);
  }
  std::ostringstream o;
  o << names.size() << "x" << std::hex << h;
  return o.str();
}

std::string size_bucket(std::int64_t n, int elem_bytes) {
  int log2n = 0;
  while (log2n < 62 && (std::int64_t{1} << (log2n + 1)) <= n) ++log2n;
  return "log2n" + std::to_string(log2n) + "_e" + std::to_string(elem_bytes);
}

tuning_key tuning_key_of(const device_desc& d, const std::string& family, const plan& p, const std::string& bucket) {
  std::vector<std::string> names;
  names.reserve(p.all.size());
  for (const auto& e : p.all) names.push_back(e.name);
  return {device_identity(d), family, candidate_set_id(names), bucket};
}

bool adopt_cached_winner(const device_desc& d, const tuning_entry& e, plan& p) {
  for (std::size_t i = 0; i < p.all.size(); ++i) {
    if (p.all[i].name != e.winner) continue;
    if (!p.all[i].fits) return false;  // as choose() judged it: resources, declared spills, availability
    const bool same = p.index == static_cast<int>(i);
    p.index = static_cast<int>(i);
    p.name = e.winner;
    p.occ = occupancy(d, p.all[i].res);
    p.predicted_us = e.measured_us;
    p.from_tuning_cache = true;
    std::ostringstream w;
    w << "from tuning cache: " << e.winner << " measured " << fmt_us(e.measured_us);
    if (!e.date.empty()) w << " on " << e.date;
    w << (same ? " (also the model's choice)" : " (the model preferred another candidate)") << "\nmodel: " << p.why;
    p.why = w.str();
    return true;
  }
  return false;
}

bool apply_tuning_cache(const device_desc& d, const std::string& family, const std::string& bucket, plan& p) {
  if (p.all.empty() || tuning_mode_from_env() == tuning_mode::off) return false;
  const auto hit = tuning_cache::instance().lookup(tuning_key_of(d, family, p, bucket));
  return hit && adopt_cached_winner(d, *hit, p);
}

double roofline_us(const device_desc& d, double bytes, double flops, double peak_tflops) {
  const double mem_us = d.mem_bw_gbps > 0 ? bytes / (d.mem_bw_gbps * 1e9) * 1e6 : 0.0;
  const double math_us = peak_tflops > 0 ? flops / (peak_tflops * 1e12) * 1e6 : 0.0;
  return std::max(mem_us, math_us);
}

std::int64_t waves(const device_desc& d, std::int64_t blocks, const occupancy_result& occ) {
  const std::int64_t slots = std::int64_t{occ.blocks_per_sm} * d.occupancy_units();
  if (slots <= 0 || blocks <= 0) return 0;
  return (blocks + slots - 1) / slots;
}

double wave_efficiency(const device_desc& d, std::int64_t blocks, const occupancy_result& occ) {
  const std::int64_t w = waves(d, blocks, occ);
  if (w == 0) return 0.0;
  const std::int64_t slots = std::int64_t{occ.blocks_per_sm} * d.occupancy_units();
  return static_cast<double>(blocks) / static_cast<double>(w * slots);
}

}  // namespace pk::archdb
