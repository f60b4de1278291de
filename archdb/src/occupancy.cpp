// pk::archdb — occupancy models. Formulas and their sources: ARCH_FACTS §6.
#include "pk/archdb/occupancy.hpp"

#include <algorithm>
#include <limits>
#include <sstream>
#include <vector>

namespace pk::archdb {
namespace {

constexpr std::int64_t unlimited = std::numeric_limits<int>::max();

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t align_to(std::int64_t v, std::int64_t g) { return g > 0 ? ceil_div(v, g) * g : v; }

occupancy_result invalid(std::string why) {
  occupancy_result r;
  r.limiter = "invalid";
  r.detail = std::move(why);
  return r;
}

// One candidate limit on the block count, named for the report.
struct limit {
  const char* name;
  std::int64_t blocks;
};

// Smallest limit; ties go to the earliest entry (the caller orders by how informative a name is).
const limit& binding(const std::vector<limit>& ls) {
  const limit* best = &ls.front();
  for (const auto& l : ls)
    if (l.blocks < best->blocks) best = &l;
  return *best;
}

std::string fmt_limit(std::int64_t v) { return v >= unlimited ? std::string("unlimited") : std::to_string(v); }

// AMD gfx9 SGPR -> waves per SIMD steps (<= 80 -> 10, <= 88 -> 9, <= 100 -> 8, else 7) [LLVM-BASEINFO
// getOccupancyWithNumSGPRs], ARCH_FACTS §6.2; the caller caps the result at max_waves_per_simd.
int cdna_waves_for_sgprs(int sgprs) {
  if (sgprs <= 80) return 10;
  if (sgprs <= 88) return 9;
  if (sgprs <= 100) return 8;
  return 7;
}

}  // namespace

occupancy_result occupancy_nvidia(const device_desc& d, const kernel_resources& k, std::int64_t preferred_carveout) {
  if (d.warp_size <= 0 || d.max_threads_per_sm <= 0 || d.max_blocks_per_sm <= 0)
    return invalid(d.name + ": the device entry lacks the limits the occupancy model needs");
  if (k.threads_per_block <= 0 || k.threads_per_block > d.max_threads_per_block)
    return invalid("threads per block " + std::to_string(k.threads_per_block) + " outside [1, " +
                   std::to_string(d.max_threads_per_block) + "]");
  const std::int64_t W = ceil_div(k.threads_per_block, d.warp_size);
  const std::int64_t max_warps = d.max_threads_per_sm / d.warp_size;
  std::ostringstream det;

  // 1. Warp slots.
  const std::int64_t b_warps = max_warps / W;
  det << "warps: " << W << " per block, " << max_warps << " per SM -> " << b_warps << " blocks";

  // 2. Registers: allocated per warp in reg_alloc_unit steps, the file split across smsp_per_sm.
  std::int64_t b_regs = unlimited;
  if (k.regs_per_thread > 0) {
    if (d.max_regs_per_thread > 0 && k.regs_per_thread > d.max_regs_per_thread)
      return invalid("registers per thread " + std::to_string(k.regs_per_thread) + " > " +
                     std::to_string(d.max_regs_per_thread));
    const int smsp = std::max(1, d.smsp_per_sm);
    const std::int64_t regs_warp = align_to(std::int64_t{k.regs_per_thread} * d.warp_size, d.reg_alloc_unit);
    const std::int64_t per_block = regs_warp * align_to(W, smsp);
    if (d.regs_per_block > 0 && per_block > d.regs_per_block)
      return invalid("registers per block " + std::to_string(per_block) + " (" + std::to_string(regs_warp) +
                     " per warp x " + std::to_string(align_to(W, smsp)) + " warps) > " + std::to_string(d.regs_per_block));
    const std::int64_t warps_per_smsp = (d.regs_per_sm / smsp) / regs_warp;
    b_regs = warps_per_smsp * smsp / W;
    det << "; registers: " << regs_warp << " per warp, " << warps_per_smsp << " warps per sub-partition -> " << b_regs
        << " blocks";
  }

  // 3. Shared memory: per-block reserve and granularity, carveout rounded to a legal size.
  const std::int64_t smem = k.static_smem + k.dynamic_smem;
  if (d.smem_per_block > 0 && k.static_smem > d.smem_per_block)
    return invalid("static shared memory " + std::to_string(k.static_smem) + " B > " + std::to_string(d.smem_per_block) +
                   " B static limit (use dynamic shared memory with opt-in)");
  const std::int64_t s_cta = align_to(smem + d.smem_reserved_per_block, d.smem_alloc_granularity);
  if (s_cta > d.smem_per_block_optin + d.smem_reserved_per_block)
    return invalid("shared memory " + std::to_string(smem) + " B (+" + std::to_string(d.smem_reserved_per_block) +
                   " reserved, granularity " + std::to_string(d.smem_alloc_granularity) + ") > " +
                   std::to_string(d.smem_per_block_optin) + " B per block");
  std::int64_t carveout = d.smem_per_sm;
  if (!d.smem_carveouts_kb.empty()) {
    const std::int64_t pref = preferred_carveout < 0 ? d.smem_per_sm : preferred_carveout;
    auto legal_at_least = [&d](std::int64_t bytes) {
      for (int kb : d.smem_carveouts_kb)
        if (std::int64_t{kb} * 1024 >= bytes) return std::int64_t{kb} * 1024;
      return std::int64_t{d.smem_carveouts_kb.back()} * 1024;
    };
    carveout = legal_at_least(pref);
    if (carveout < s_cta) carveout = legal_at_least(s_cta);
  }
  const std::int64_t b_smem = s_cta > 0 ? carveout / s_cta : unlimited;
  det << "; shared memory: " << s_cta << " B per block incl. reserve, carveout " << carveout << " B -> "
      << fmt_limit(b_smem) << " blocks";

  // 4. Hard cap; 5. named barriers.
  det << "; block cap " << d.max_blocks_per_sm;
  std::int64_t b_bar = unlimited;
  if (k.named_barriers > 0) {
    const std::int64_t available = std::int64_t{std::max(1, d.barrier_blocks_factor)} * d.max_blocks_per_sm;
    b_bar = available / k.named_barriers;
    det << "; barriers: " << available << " per SM / " << k.named_barriers << " -> " << b_bar << " blocks";
  }

  const std::vector<limit> ls = {
      {"warps", b_warps}, {"registers", b_regs}, {"shared memory", b_smem}, {"blocks", d.max_blocks_per_sm}, {"barriers", b_bar}};
  const limit& bind = binding(ls);
  occupancy_result r;
  r.blocks_per_sm = static_cast<int>(bind.blocks);
  r.active_warps = static_cast<int>(bind.blocks * W);
  r.occupancy = static_cast<double>(r.active_warps) / static_cast<double>(max_warps);
  r.limiter = bind.blocks == 0 ? "invalid" : bind.name;
  det << " => " << r.blocks_per_sm << " blocks/SM, " << r.active_warps << " warps (" << r.occupancy * 100.0 << "%), limited by "
      << bind.name;
  r.detail = det.str();
  return r;
}

namespace {

// Shared AMD model: `units` SIMDs share the workgroup slots and LDS pool of one CU (CDNA) or WGP (RDNA3).
occupancy_result occupancy_amd(const device_desc& d, const kernel_resources& k, int cus_per_unit) {
  if (d.warp_size <= 0 || d.max_waves_per_simd <= 0 || d.simds_per_cu <= 0 || d.vgprs_per_simd_lane <= 0)
    return invalid(d.name + ": the device entry lacks the limits the occupancy model needs");
  if (k.threads_per_block <= 0 || k.threads_per_block > d.max_threads_per_block)
    return invalid("workgroup size " + std::to_string(k.threads_per_block) + " outside [1, " +
                   std::to_string(d.max_threads_per_block) + "]");
  const std::int64_t N = ceil_div(k.threads_per_block, d.warp_size);
  const std::int64_t simds = std::int64_t{d.simds_per_cu} * cus_per_unit;
  const std::int64_t max_waves_unit = simds * d.max_waves_per_simd;
  std::ostringstream det;

  // 1. VGPRs: total = alignTo(ArchVGPR, 4) + AGPR when AGPRs are used [LLVM getTotalNumVGPRs].
  if (d.max_arch_vgprs > 0 && k.regs_per_thread > d.max_arch_vgprs)
    return invalid("VGPRs " + std::to_string(k.regs_per_thread) + " > " + std::to_string(d.max_arch_vgprs) + " ArchVGPRs");
  if (k.agprs > d.agprs_per_lane)
    return invalid("AGPRs " + std::to_string(k.agprs) + " > " + std::to_string(d.agprs_per_lane) + " on " + d.name);
  const std::int64_t agpr_align = 4;  // AGPRs start at a 4-aligned offset [LLVM getTotalNumVGPRs(has90AInsts,...)]
  const std::int64_t V = k.agprs > 0 ? align_to(k.regs_per_thread, agpr_align) + k.agprs : k.regs_per_thread;
  if (V > d.vgprs_per_simd_lane)
    return invalid("VGPRs " + std::to_string(V) + " (arch + AGPR) > " + std::to_string(d.vgprs_per_simd_lane) + " per lane");
  const std::int64_t waves_vgpr =
      V <= 0 ? d.max_waves_per_simd
             : std::min<std::int64_t>(d.max_waves_per_simd,
                                      std::max<std::int64_t>(1, d.vgprs_per_simd_lane / align_to(V, d.vgpr_granule)));
  det << "vgprs: " << V << " -> " << waves_vgpr << " waves/SIMD";

  // 2. SGPRs (gfx9 only; sgprs_per_simd == 0 means no SGPR occupancy limit).
  std::int64_t waves_sgpr = d.max_waves_per_simd;
  if (k.sgprs > 0) {
    if (d.max_sgprs > 0 && k.sgprs > d.max_sgprs)
      return invalid("SGPRs " + std::to_string(k.sgprs) + " > " + std::to_string(d.max_sgprs) + " addressable");
    if (d.sgprs_per_simd > 0) {
      waves_sgpr = std::min<std::int64_t>(d.max_waves_per_simd, cdna_waves_for_sgprs(k.sgprs));
      det << "; sgprs: " << k.sgprs << " -> " << waves_sgpr << " waves/SIMD";
    }
  }

  // 3. Workgroup slots (single-wave WGs use every slot; multi-wave WGs need a barrier), LDS.
  const std::int64_t single_slots = std::int64_t{d.max_blocks_per_sm} * cus_per_unit;
  const std::int64_t barrier_slots = std::int64_t{d.max_barrier_wgs_per_cu} * cus_per_unit;
  const std::int64_t wg_waves = max_waves_unit / N;
  const char* slot_name = "blocks";
  std::int64_t wg_slots = single_slots;
  if (N > 1) {
    wg_slots = std::min(wg_waves, barrier_slots);
    slot_name = wg_waves <= barrier_slots ? "warps" : "barriers";
  }
  const std::int64_t lds = k.static_smem + k.dynamic_smem;
  if (lds > d.smem_per_block_optin)
    return invalid("LDS " + std::to_string(lds) + " B > " + std::to_string(d.smem_per_block_optin) + " B per workgroup");
  const std::int64_t pool = d.smem_per_sm * cus_per_unit;
  const std::int64_t lds_wg = align_to(lds, d.smem_alloc_granularity);
  const std::int64_t wg_lds = lds_wg > 0 ? pool / lds_wg : unlimited;
  const std::int64_t wg_vgpr = simds * waves_vgpr / N;
  const std::int64_t wg_sgpr = simds * waves_sgpr / N;
  det << "; workgroup slots " << wg_slots << "; lds: " << lds_wg << " B (granule " << d.smem_alloc_granularity << ") of "
      << pool << " -> " << fmt_limit(wg_lds) << " WGs; vgpr WGs " << wg_vgpr;

  const std::vector<limit> ls = {{"vgprs", wg_vgpr}, {"sgprs", wg_sgpr}, {"lds", wg_lds}, {slot_name, wg_slots}};
  const limit& bind = binding(ls);
  occupancy_result r;
  const std::int64_t wgs = bind.blocks;
  const std::int64_t waves_simd = std::min({waves_vgpr, waves_sgpr, ceil_div(wgs * N, simds)});
  r.blocks_per_sm = static_cast<int>(wgs);
  r.active_warps = static_cast<int>(wgs * N);
  r.occupancy = wgs == 0 ? 0.0 : static_cast<double>(waves_simd) / d.max_waves_per_simd;
  r.limiter = wgs == 0 ? "invalid" : (waves_simd == d.max_waves_per_simd ? "warps" : bind.name);
  det << " => " << wgs << " WGs/" << (cus_per_unit > 1 ? "WGP" : "CU") << ", " << waves_simd << " waves/SIMD ("
      << r.occupancy * 100.0 << "%), limited by " << r.limiter;
  if (wgs == 0) det << " (" << N << " waves per workgroup do not fit the per-SIMD " << bind.name << " limit)";
  r.detail = det.str();
  return r;
}

}  // namespace

occupancy_result occupancy_cdna(const device_desc& d, const kernel_resources& k) { return occupancy_amd(d, k, 1); }

occupancy_result occupancy_rdna3(const device_desc& d, const kernel_resources& k) {
  if (k.agprs > 0) return invalid("AGPRs requested on " + d.name + ", which has none");
  return occupancy_amd(d, k, std::max(1, d.cus_per_wgp));
}

occupancy_result occupancy(const device_desc& d, const kernel_resources& k, std::int64_t preferred_carveout) {
  if (d.vendor_id == vendor::nvidia) return occupancy_nvidia(d, k, preferred_carveout);
  if (d.cus_per_wgp > 1 || traits(d.isa).mma == mma_family::wmma_rdna3 || traits(d.isa).mma == mma_family::wmma_rdna4)
    return occupancy_rdna3(d, k);
  return occupancy_cdna(d, k);
}

}  // namespace pk::archdb
