// Device-wide reduction: validation, planning and dispatch to the per-target instances. Compiled once.
#include <pk/config.hpp>
#include <pk/portable/lane.hpp>
#include <pk/reduction/detail/reduce_call.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <algorithm>
#include <sstream>

// The per-target instances (kernels/reduction/src/reduce_sum_f32.cpp, once per built target).
#define PK_DETAIL_DECLARE_REDUCE(t) \
  namespace pk::t::impl {           \
  status reduce_sum_f32(const reduction::reduce_call&); \
  }
PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_DECLARE_REDUCE)
#undef PK_DETAIL_DECLARE_REDUCE

namespace pk {
namespace reduction {

namespace {
// Registers per thread assumed when the compiler's report is not at hand (the host plans for any
// device): the reduction keeps one accumulator and one 16-byte vector live, so it is far from every
// register limit; the CI resource check (ci/resource_check) verifies the real counts fit.
constexpr int assumed_regs_per_thread = 32;

archdb::candidate candidate_of(const reduce_policy& p, int elem_bytes) {
  archdb::candidate c;
  c.name = name_of(p);
  c.res.threads_per_block = p.block_threads;
  c.res.regs_per_thread = assumed_regs_per_thread;
  // block_reduce temp storage: one partial per warp of the smallest warp size, the result, the flag.
  c.res.static_smem = static_cast<std::int64_t>(p.block_threads / min_warp_size + 2) * std::max(elem_bytes, 4);
  return c;
}
}  // namespace

archdb::plan plan_reduce(const archdb::device_desc& device, std::int64_t n, int elem_bytes) {
  std::vector<archdb::candidate> cands;
  for (const reduce_policy& p : reduce_candidates) cands.push_back(candidate_of(p, elem_bytes));
  const double bytes = static_cast<double>(n) * elem_bytes;
  return archdb::choose(device, cands, [&](const archdb::candidate& c, const archdb::occupancy_result& occ) {
    const reduce_policy& p = reduce_candidates[static_cast<std::size_t>(&c - cands.data())];
    const std::int64_t tile = std::int64_t{p.block_threads} * scaled_items(p, static_cast<std::size_t>(elem_bytes));
    const std::int64_t tiles = std::max<std::int64_t>(1, (n + tile - 1) / tile);
    const std::int64_t resident = std::int64_t{occ.blocks_per_sm} * device.sm_count;
    const std::int64_t grid = std::min(tiles, std::max<std::int64_t>(1, resident));
    // Bandwidth needs enough loads in flight: the fraction of the device's threads that are resident
    // and have work (a full device at occupancy >= 50% is treated as saturating bandwidth).
    const double busy = std::min(1.0, static_cast<double>(grid * p.block_threads) /
                                          std::max(1.0, 0.5 * device.max_threads_per_sm * device.sm_count));
    const double stream_us = archdb::roofline_us(device, bytes, 0, 0) / std::max(busy, 1e-3);
    // The last block reduces `grid` partials: a second, serial step proportional to the grid.
    const double tail_us = static_cast<double>(grid) / p.block_threads * 0.05;
    std::ostringstream why;
    why << "grid " << grid << " (" << tiles << " tiles, " << resident << " resident), " << static_cast<int>(busy * 100)
        << "% of thread slots busy, stream " << stream_us << " us + tail " << tail_us << " us";
    return archdb::cost_estimate{stream_us + tail_us, why.str()};
  });
}

unsigned reduce_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t n, int elem_bytes) {
  const reduce_policy& pol = reduce_candidates[static_cast<std::size_t>(p.index)];
  const std::int64_t tile = std::int64_t{pol.block_threads} * scaled_items(pol, static_cast<std::size_t>(elem_bytes));
  const std::int64_t tiles = std::max<std::int64_t>(1, (n + tile - 1) / tile);
  const std::int64_t resident = std::max<std::int64_t>(1, std::int64_t{p.occ.blocks_per_sm} * device.sm_count);
  return static_cast<unsigned>(std::min(tiles, resident));
}

}  // namespace reduction

status reduce_sum(const stream& s, const float* in, std::int64_t n, float* out) {
  if (!s.valid()) return invalid_argument("reduce_sum: stream: not initialized (use pk::default_stream)");
  if (n < 0) return invalid_argument("reduce_sum: n = " + std::to_string(n) + ": must be >= 0");
  if (out == nullptr) return invalid_argument("reduce_sum: out: must not be null");
  if (in == nullptr && n > 0) return invalid_argument("reduce_sum: in: must not be null when n > 0");
  const archdb::plan p = reduction::plan_reduce(s.device(), n, sizeof(float));
  if (p.index < 0) return unsupported("reduce_sum: no compiled policy fits " + s.device().name + ": " + p.why);
  reduction::reduce_call c;
  c.s = &s;
  c.policy = p.index;
  c.grid = reduction::reduce_grid(s.device(), p, n, sizeof(float));
  c.in = in;
  c.n = n;
  c.out = out;
  c.type_name = "f32";
  // Workspace: the ticket counter first (kept zero between calls), then `grid` partials.
  constexpr std::size_t ticket_bytes = 256;  // keeps the partials 256-byte aligned
  void* ws = nullptr;
  PK_TRY(detail::stream_workspace(s, ticket_bytes + c.grid * sizeof(float), &ws));
  c.ticket = static_cast<unsigned*>(ws);
  c.partials = static_cast<char*>(ws) + ticket_bytes;
  switch (s.code_target()) {
#define PK_DETAIL_DISPATCH(t) \
  case target::t: return t::impl::reduce_sum_f32(c);
    PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_DISPATCH)
#undef PK_DETAIL_DISPATCH
    default: return unsupported(std::string("reduce_sum: target ") + to_string(s.code_target()) + " is not built");
  }
}

}  // namespace pk
