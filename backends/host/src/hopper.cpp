// The sm_90a (Hopper) machinery of the host emulator: shared-window offsets, named barriers,
// mbarriers, tensor copies (TMA, tiled mode) and the warpgroup MMA (wgmma), each checked against what
// the PTX ISA requires. Everything completes synchronously when issued: a tensor copy has written shared
// memory and completed its transaction bytes before tma_load returns, and a wgmma has written its
// accumulators when the warpgroup leaves it (wgmma.fence / commit_group / wait_group need nothing).
// See docs/emulator.md, "Hopper (host_sm90a)".
#include "emulator_state.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace pk::backend::host {

namespace {

using detail::fail_here;
using detail::lane;
using detail::lane_status;
using detail::require_thread;
using detail::self;
using detail::where;
using detail::yield_to_scheduler;

// PTX mbarrier limits: arrival counts and transaction counts lie in [-(2^20 - 1), 2^20 - 1].
constexpr std::int64_t mbarrier_max_count = (std::int64_t{1} << 20) - 1;

block_state& this_block() { return *require_thread("sm_90 intrinsic").block; }

std::string hex(std::uint64_t v) {
  std::ostringstream o;
  o << "0x" << std::hex << v;
  return o.str();
}

// Offset of [p, p + bytes) in the block's shared window, or an error naming `what` and the site.
std::uint32_t window_offset(const block_state& b, const void* p, std::size_t bytes, const char* what,
                            const call_site& site) {
  // The block's shared memory is what the launch gave it (dynamic, then static): an object past it would lie outside
  // the block's allocation on a GPU, even where the emulator's arena (the per-block limit) has room.
  const auto a = reinterpret_cast<std::uintptr_t>(p), lo = reinterpret_cast<std::uintptr_t>(b.arena);
  if (a < lo || a - lo > b.used || bytes > b.used - (a - lo)) {
    fail_here(std::string(what) + " at " + where(site) + ": " + std::to_string(bytes) + " bytes at shared offset " +
              std::to_string(a - lo) + " are not inside the block's shared memory (" + std::to_string(b.used) +
              " bytes: the launch's dynamic size and the static allocations)");
  }
  return static_cast<std::uint32_t>(a - lo);
}

// The swizzle of a shared-window byte address: with S the span (32, 64, 128 bytes), address bits
// [4, 4 + log2(S/16)) are XORed with bits [7, 7 + log2(S/16)) (CuTe Swizzle<log2(S/16), 4, 3>).
std::uint64_t swizzle_address(std::uint64_t addr, int span_bytes) {
  if (span_bytes <= 16) return addr;
  const auto mask = static_cast<std::uint64_t>(span_bytes / 16 - 1);
  return addr ^ (((addr >> 7) & mask) << 4);
}

int swizzle_span(swizzle_mode m) {
  switch (m) {
    case swizzle_mode::none: return 0;
    case swizzle_mode::b32: return 32;
    case swizzle_mode::b64: return 64;
    case swizzle_mode::b128: return 128;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// mbarrier state.

std::string mbarrier_name(const block_state& b, const mbarrier_state* m) {
  return "mbarrier at shared offset " +
         std::to_string(reinterpret_cast<const std::byte*>(m) - b.arena);
}

// Checks that `m` is an initialised mbarrier of this block; returns it writable.
mbarrier_state* checked_mbarrier(mbarrier_state* m, const char* api, const call_site& site) {
  block_state& b = this_block();
  if (m == nullptr) fail_here(std::string(api) + " at " + where(site) + ": null mbarrier");
  const std::uint32_t off = window_offset(b, m, sizeof(mbarrier_state), api, site);
  if (off % 8 != 0)
    fail_here(std::string(api) + " at " + where(site) + ": mbarrier at shared offset " + std::to_string(off) +
              " is not 8-byte aligned");
  if (m->magic != b.mbarrier_magic)
    fail_here(std::string(api) + " at " + where(site) + ": the " + mbarrier_name(b, m) +
              " is not initialised (mbarrier_init must come first, in this block)");
  return m;
}

void check_tx_range(const block_state& b, const mbarrier_state* m, const char* api, const call_site& site) {
  if (m->tx > mbarrier_max_count || m->tx < -mbarrier_max_count)
    fail_here(std::string(api) + " at " + where(site) + ": the " + mbarrier_name(b, m) + "'s transaction count " +
              std::to_string(m->tx) + " is outside the hardware's range of +-(2^20 - 1)");
}

// A phase completes when no arrival and no transaction byte is pending.
void maybe_complete_phase(mbarrier_state* m) {
  if (m->pending == 0 && m->tx == 0) {
    ++m->phase;
    m->pending = m->expected;
  }
}

void complete_tx(mbarrier_state* m, std::uint32_t bytes, const char* api, const call_site& site) {
  m->tx -= static_cast<std::int32_t>(bytes);
  check_tx_range(this_block(), m, api, site);
  maybe_complete_phase(m);
}

// ---------------------------------------------------------------------------------------------
// Warpgroup collectives.

void enter_warpgroup(detail::group_kind k, const char* name, const call_site& site) {
  thread_ctx& t = require_thread(name);
  lane& l = self();
  const int n = static_cast<int>(t.block_dim.x * t.block_dim.y * t.block_dim.z);
  if (t.warp_size != 32)
    fail_here(std::string(name) + " at " + where(site) + ": warpgroup instructions need 32-lane warps (this target's warp is " +
              std::to_string(t.warp_size) + " lanes)");
  if (n % detail::warpgroup_threads != 0)
    fail_here(std::string(name) + " at " + where(site) + ": the block has " + std::to_string(n) +
              " threads; warpgroup instructions need a multiple of 128 threads (every warpgroup complete)");
  l.gkind = k;
  l.site = site;
  l.st = lane_status::at_warpgroup;
  yield_to_scheduler(l);
}

// ---------------------------------------------------------------------------------------------
// wgmma operands.

float bf16_to_float(std::uint16_t h) {
  const std::uint32_t bits = std::uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float fp16_to_float(std::uint16_t h) {
  const bool neg = (h & 0x8000u) != 0;
  const int exp = (h >> 10) & 0x1f;
  const std::uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0x1f) {
    const std::uint32_t bits = 0x7f800000u | (mant << 13);
    std::memcpy(&v, &bits, sizeof v);
  } else if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else {
    const std::uint32_t bits = (static_cast<std::uint32_t>(exp - 15 + 127) << 23) | (mant << 13);
    std::memcpy(&v, &bits, sizeof v);
  }
  return neg ? -v : v;
}

struct smem_desc {
  std::uint32_t start = 0, lbo = 0, sbo = 0;  // bytes
  int base_offset = 0;
  int layout = 0;  // 0 none (interleave), 1 128-byte swizzle, 2 64-byte, 3 32-byte
};

smem_desc decode(std::uint64_t d) {
  smem_desc s;
  s.start = static_cast<std::uint32_t>(d & 0x3FFF) << 4;
  s.lbo = static_cast<std::uint32_t>((d >> 16) & 0x3FFF) << 4;
  s.sbo = static_cast<std::uint32_t>((d >> 32) & 0x3FFF) << 4;
  s.base_offset = static_cast<int>((d >> 49) & 0x7);
  s.layout = static_cast<int>((d >> 62) & 0x3);
  return s;
}

// Reads an operand of `rows` x 16 (rows: M for A, N for B; K = 16) 16-bit elements through a shared
// memory descriptor, with the canonical layouts of the PTX ISA ("Shared Memory Matrix Layout"; CuTe's
// make_gmma_desc spells them the same way). With T = 8 elements per 16 bytes and W the swizzle span in
// 16-byte units (1 none, 2 32B, 4 64B, 8 128B), in elements, (shape):(stride):
//   K-major  none    ((8,m),(T,2)):((1T,SBO),(1,LBO))
//   K-major  swizzle ((8,m),(T,2)):((WT,SBO),(1,T))        (LBO unused)
//   MN-major none    ((T,1,m),(8,2)):((1,T,SBO),(1T,LBO))
//   MN-major swizzle ((T,W,m),(8,2)):((1,T,LBO),(WT,SBO))
// then the swizzle of the resulting shared-window byte address. Returns "" or an error.
std::string read_operand(const block_state& b, std::uint64_t desc, bool mn_major, int rows, bool bf16, float* out) {
  const smem_desc s = decode(desc);
  if (s.base_offset != 0)
    return "descriptor " + hex(desc) + " has matrix base offset " + std::to_string(s.base_offset) +
           "; the emulator models base offset 0 only (swizzle patterns starting at their repeat boundary)";
  const int w = s.layout == 0 ? 1 : s.layout == 1 ? 8 : s.layout == 2 ? 4 : 2;
  constexpr int e = 2;   // bytes per element
  constexpr int t = 8;   // elements per 16 bytes
  for (int i = 0; i < rows; ++i) {
    for (int k = 0; k < 16; ++k) {
      std::uint64_t off;
      if (!mn_major) {
        const std::uint64_t k_chunk = s.layout == 0 ? s.lbo : 16;
        off = std::uint64_t(i % 8) * w * 16 + std::uint64_t(i / 8) * s.sbo + std::uint64_t(k % 8) * e +
              std::uint64_t(k / 8) * k_chunk;
      } else if (s.layout == 0) {
        off = std::uint64_t(i % t) * e + std::uint64_t(i / t) * s.sbo + std::uint64_t(k % 8) * 16 +
              std::uint64_t(k / 8) * s.lbo;
      } else {
        off = std::uint64_t(i % t) * e + std::uint64_t((i / t) % w) * 16 + std::uint64_t(i / (t * w)) * s.lbo +
              std::uint64_t(k % 8) * w * 16 + std::uint64_t(k / 8) * s.sbo;
      }
      std::uint64_t addr = s.start + off;
      if (s.layout != 0) addr = swizzle_address(addr, w * 16);
      if (addr + e > b.arena_bytes) {
        std::ostringstream o;
        o << "descriptor " << hex(desc) << " (start " << s.start << ", LBO " << s.lbo << ", SBO " << s.sbo
          << ", layout " << s.layout << ", " << (mn_major ? "MN" : "K") << "-major): element (" << i << ", k " << k
          << ") is at shared offset " << addr << ", outside the block's shared memory (" << b.arena_bytes << " bytes)";
        return o.str();
      }
      std::uint16_t h;
      std::memcpy(&h, b.arena + addr, sizeof h);
      out[i * 16 + k] = bf16 ? bf16_to_float(h) : fp16_to_float(h);
    }
  }
  return "";
}

const wgmma_op& op_of(const block_state& b, int thread) { return *static_cast<const wgmma_op*>(b.lanes[thread].in); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Scheduler hooks.

namespace detail {

std::string describe_mbarrier(const block_state& b, const mbarrier_state* m) {
  std::ostringstream o;
  o << mbarrier_name(b, m);
  if (m->magic != b.mbarrier_magic) {
    o << " (not initialised)";
    return o.str();
  }
  o << ": expected arrivals " << m->expected << ", pending arrivals " << m->pending << ", pending tx bytes "
    << m->tx << ", phase " << m->phase << " (current parity " << (m->phase & 1) << ")";
  return o.str();
}

bool mbarrier_wait_done(block_state& b, const lane& l) {
  if (l.mbar->magic != b.mbarrier_magic) {
    b.fail("thread " + std::to_string(l.tc.linear_tid) + " waits at " + where(l.site) + " on the " +
           mbarrier_name(b, l.mbar) + ", which is no longer initialised (overwritten while threads wait on it)");
    return false;
  }
  return static_cast<int>(l.mbar->phase & 1) != l.arg;
}

bool complete_wgmma(block_state& b, int first) {
  const int group = first / warpgroup_threads;
  const lane& lead_lane = b.lanes[first];
  const wgmma_op& lead = op_of(b, first);
  const std::string at = "warpgroup " + std::to_string(group) + ": wgmma at " + where(lead_lane.site) + ": ";
  for (int i = first; i < first + warpgroup_threads; ++i) {
    const wgmma_op& o = op_of(b, i);
    const char* differs = o.n != lead.n                     ? "n"
                          : o.bf16 != lead.bf16             ? "the input type"
                          : o.a_in_registers != lead.a_in_registers ? "where A is"
                          : o.a_mn_major != lead.a_mn_major ? "A's major-ness"
                          : o.b_mn_major != lead.b_mn_major ? "B's major-ness"
                          : o.accumulate != lead.accumulate ? "scale-d (accumulate)"
                          : o.b_desc != lead.b_desc         ? "B's descriptor"
                          : (!lead.a_in_registers && o.a_desc != lead.a_desc) ? "A's descriptor"
                                                                               : nullptr;
    if (differs) {
      b.fail(at + "thread " + std::to_string(i) + " and thread " + std::to_string(first) + " differ in " + differs +
             " (the operands of a warpgroup instruction must be the same in every thread)");
      return false;
    }
    if (o.d == nullptr || (o.a_in_registers && o.a_regs == nullptr)) {
      b.fail(at + "thread " + std::to_string(i) + " passes a null accumulator or A-register pointer");
      return false;
    }
  }
  const int n = lead.n;
  if (n < 8 || n > 256 || n % 8 != 0) {
    b.fail(at + "N = " + std::to_string(n) + " is not a multiple of 8 in [8, 256]");
    return false;
  }
  if (lead.a_in_registers && lead.a_mn_major) {
    b.fail(at + "A in registers has no transpose (imm-trans-a exists only for A in shared memory)");
    return false;
  }
  constexpr int m_rows = 64, k_cols = 16;
  std::vector<float> a(m_rows * k_cols), bm(static_cast<std::size_t>(n) * k_cols);
  if (lead.a_in_registers) {
    // Value v of thread t (warp w, lane l) holds row 16 w + l/4 + 8 ((v/2) % 2), k = 2 (l%4) + v%2 + 8 (v/4).
    for (int t = 0; t < warpgroup_threads; ++t) {
      const int w = t / 32, l = t % 32;
      const std::uint32_t* regs = op_of(b, first + t).a_regs;
      for (int v = 0; v < 8; ++v) {
        const int row = 16 * w + l / 4 + 8 * ((v / 2) % 2);
        const int k = 2 * (l % 4) + v % 2 + 8 * (v / 4);
        const auto h = static_cast<std::uint16_t>(regs[v / 2] >> (16 * (v % 2)));
        a[row * k_cols + k] = lead.bf16 ? bf16_to_float(h) : fp16_to_float(h);
      }
    }
  } else if (std::string e = read_operand(b, lead.a_desc, lead.a_mn_major, m_rows, lead.bf16, a.data()); !e.empty()) {
    b.fail(at + "A: " + e);
    return false;
  }
  if (std::string e = read_operand(b, lead.b_desc, lead.b_mn_major, n, lead.bf16, bm.data()); !e.empty()) {
    b.fail(at + "B: " + e);
    return false;
  }
  // D (64 x n) = A (64 x 16) * B^T (B held as n x 16): products of 16-bit inputs are exact in fp32; the
  // sum is fp32 in K order, then added to D when accumulating (as the sm_80 atoms' emulation does).
  std::vector<float> d(static_cast<std::size_t>(m_rows) * n);
  for (int m = 0; m < m_rows; ++m)
    for (int c = 0; c < n; ++c) {
      float acc = 0.0f;
      for (int k = 0; k < k_cols; ++k) acc += a[m * k_cols + k] * bm[c * k_cols + k];
      d[static_cast<std::size_t>(m) * n + c] = acc;
    }
  // Accumulator value i = 4 j + r of thread t (warp w, lane l): row 16 w + l/4 + 8 (r/2), column 8 j + 2 (l%4) + r%2.
  for (int t = 0; t < warpgroup_threads; ++t) {
    const int w = t / 32, l = t % 32;
    float* out = op_of(b, first + t).d;
    for (int i = 0; i < n / 2; ++i) {
      const int j = i / 4, r = i % 4;
      const int row = 16 * w + l / 4 + 8 * (r / 2);
      const int col = 8 * j + 2 * (l % 4) + r % 2;
      const float p = d[static_cast<std::size_t>(row) * n + col];
      out[i] = lead.accumulate ? out[i] + p : p;
    }
  }
  return true;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Device-side entry points.

std::uint32_t shared_offset(const void* p, call_site site) {
  return window_offset(this_block(), p, 1, "shared address", site);
}

namespace {

void named_barrier(int id, int count, bool wait, const call_site& site) {
  thread_ctx& t = require_thread("named barrier");
  block_state& b = *t.block;
  lane& l = self();
  const char* api = wait ? "named barrier sync" : "named barrier arrive";
  const int threads = static_cast<int>(b.lanes.size());
  if (id <= 0 || id >= detail::named_barrier_ids)
    fail_here(std::string(api) + " at " + where(site) + ": barrier id " + std::to_string(id) +
              " is not in 1..15 (0 is the block barrier)");
  if (count <= 0 || count % b.warp_size != 0 || count > threads)
    fail_here(std::string(api) + " " + std::to_string(id) + " at " + where(site) + ": thread count " +
              std::to_string(count) + " must be a positive multiple of the warp size (" + std::to_string(b.warp_size) +
              ") and at most the block's " + std::to_string(threads) + " threads");
  detail::named_barrier_phase& p = b.named[id];
  if (p.arrived == 0) {
    p.count = count;
    p.first = site;
  } else if (p.count != count) {
    fail_here(std::string(api) + " " + std::to_string(id) + " at " + where(site) + ": thread count " +
              std::to_string(count) + " differs from the " + std::to_string(p.count) +
              " of the phase in progress (first arrival at " + where(p.first) + ")");
  }
  if (++p.arrived == p.count) {
    for (lane& o : b.lanes)
      if (o.st == lane_status::at_named && o.named_id == id) o.st = lane_status::ready;
    p.arrived = 0;
    p.count = 0;
    return;
  }
  if (!wait) return;
  l.site = site;
  l.named_id = id;
  l.st = lane_status::at_named;
  yield_to_scheduler(l);
}

}  // namespace

void named_barrier_sync(int id, int count, call_site site) { named_barrier(id, count, true, site); }
void named_barrier_arrive(int id, int count, call_site site) { named_barrier(id, count, false, site); }

void mbarrier_init(mbarrier_state* m, int arrivals, call_site site) {
  block_state& b = this_block();
  if (m == nullptr) fail_here("mbarrier init at " + where(site) + ": null mbarrier");
  const std::uint32_t off = window_offset(b, m, sizeof(mbarrier_state), "mbarrier init", site);
  if (off % 8 != 0)
    fail_here("mbarrier init at " + where(site) + ": shared offset " + std::to_string(off) + " is not 8-byte aligned");
  if (arrivals < 1 || arrivals > mbarrier_max_count)
    fail_here("mbarrier init at " + where(site) + ": " + std::to_string(arrivals) +
              " arrivals per phase is outside 1..2^20-1");
  for (const lane& o : b.lanes)
    if (o.st == lane_status::at_mbarrier && o.mbar == m)
      fail_here("mbarrier init at " + where(site) + ": the " + mbarrier_name(b, m) + " is re-initialised while thread " +
                std::to_string(o.tc.linear_tid) + " waits on it at " + where(o.site));
  m->expected = arrivals;
  m->pending = arrivals;
  m->tx = 0;
  m->phase = 0;
  m->magic = b.mbarrier_magic;
  m->pad_ = 0;
}

void mbarrier_arrive(mbarrier_state* m, std::uint32_t tx_bytes, call_site site) {
  const char* api = tx_bytes ? "mbarrier arrive.expect_tx" : "mbarrier arrive";
  checked_mbarrier(m, api, site);
  block_state& b = this_block();
  if (tx_bytes > mbarrier_max_count)
    fail_here(std::string(api) + " at " + where(site) + ": " + std::to_string(tx_bytes) +
              " transaction bytes exceed 2^20-1");
  if (m->pending == 0)
    fail_here(std::string(api) + " at " + where(site) + ": more arrivals than the phase expects (" +
              detail::describe_mbarrier(b, m) + ")");
  m->tx += static_cast<std::int32_t>(tx_bytes);
  check_tx_range(b, m, api, site);
  --m->pending;
  maybe_complete_phase(m);
}

void mbarrier_expect_tx(mbarrier_state* m, std::uint32_t tx_bytes, call_site site) {
  checked_mbarrier(m, "mbarrier expect_tx", site);
  if (tx_bytes > mbarrier_max_count)
    fail_here("mbarrier expect_tx at " + where(site) + ": " + std::to_string(tx_bytes) + " transaction bytes exceed 2^20-1");
  m->tx += static_cast<std::int32_t>(tx_bytes);
  check_tx_range(this_block(), m, "mbarrier expect_tx", site);
  maybe_complete_phase(m);
}

void mbarrier_wait(mbarrier_state* m, int parity, call_site site) {
  checked_mbarrier(m, "mbarrier wait", site);
  if (parity != 0 && parity != 1)
    fail_here("mbarrier wait at " + where(site) + ": parity " + std::to_string(parity) + " is not 0 or 1");
  if (static_cast<int>(m->phase & 1) != parity) return;  // the phase of that parity has completed
  lane& l = self();
  l.site = site;
  l.mbar = m;
  l.arg = parity;
  l.st = lane_status::at_mbarrier;
  yield_to_scheduler(l);
}

void tma_load(const tma_map* map, void* dst, mbarrier_state* bar, const std::int32_t* coords, call_site site) {
  block_state& b = this_block();
  const std::string at = "tensor copy at " + where(site) + ": ";
  if (map == nullptr || coords == nullptr) fail_here(at + "null tensor map or coordinates");
  const tma_map& mp = *map;
  if (mp.rank < 1 || mp.rank > 5) fail_here(at + "rank " + std::to_string(mp.rank) + " is not in 1..5");
  const int e = mp.elem_bytes;
  if (e != 1 && e != 2 && e != 4 && e != 8) fail_here(at + "element size " + std::to_string(e) + " is not 1, 2, 4 or 8 bytes");
  if (mp.base == nullptr || reinterpret_cast<std::uintptr_t>(mp.base) % 16 != 0)
    fail_here(at + "global base " + hex(reinterpret_cast<std::uintptr_t>(mp.base)) + " is not 16-byte aligned");
  if (mp.strides[0] != static_cast<std::uint64_t>(e))
    fail_here(at + "strides[0] = " + std::to_string(mp.strides[0]) + " must be the element size " + std::to_string(e));
  std::uint64_t box_elems = 1;
  for (int i = 0; i < mp.rank; ++i) {
    const std::string dim = "dimension " + std::to_string(i) + ": ";
    if (mp.dims[i] < 1 || mp.dims[i] > (std::uint64_t{1} << 32))
      fail_here(at + dim + "size " + std::to_string(mp.dims[i]) + " is not in 1..2^32");
    if (i >= 1 && (mp.strides[i] % 16 != 0 || mp.strides[i] >= (std::uint64_t{1} << 40)))
      fail_here(at + dim + "stride " + std::to_string(mp.strides[i]) + " bytes is not a multiple of 16 below 2^40");
    if (mp.box[i] < 1 || mp.box[i] > 256) fail_here(at + dim + "box size " + std::to_string(mp.box[i]) + " is not in 1..256");
    box_elems *= mp.box[i];
  }
  const std::uint64_t row_bytes = std::uint64_t{mp.box[0]} * static_cast<std::uint64_t>(e);
  if (row_bytes % 16 != 0)
    fail_here(at + "the box's inner dimension is " + std::to_string(row_bytes) + " bytes, not a multiple of 16");
  const int span = swizzle_span(mp.swizzle);
  if (span < 0) fail_here(at + "unknown swizzle mode");
  if (span > 0 && row_bytes > static_cast<std::uint64_t>(span))
    fail_here(at + "the box's inner dimension is " + std::to_string(row_bytes) + " bytes, more than the " +
              std::to_string(span) + "-byte swizzle span");
  const std::uint64_t bytes = box_elems * static_cast<std::uint64_t>(e);
  if (bytes > b.arena_bytes) fail_here(at + "the box is " + std::to_string(bytes) + " bytes, more than shared memory");
  const std::uint32_t dst_off = window_offset(b, dst, static_cast<std::size_t>(bytes), "tensor copy destination", site);
  const std::uint32_t align = span == 128 ? 1024 : 128;
  if (dst_off % align != 0)
    fail_here(at + "destination at shared offset " + std::to_string(dst_off) + " is not " + std::to_string(align) +
              "-byte aligned" + (span == 128 ? " (128-byte swizzle)" : ""));
  mbarrier_state* m = checked_mbarrier(bar, "tensor copy", site);

  // Element by element, in box order (dimension 0 fastest), destination swizzled.
  const auto* base = static_cast<const std::byte*>(mp.base);
  std::uint32_t idx[5] = {};
  for (std::uint64_t linear = 0; linear < box_elems; ++linear) {
    bool inside = true;
    std::uint64_t src = 0;
    for (int i = 0; i < mp.rank; ++i) {
      const std::int64_t c = std::int64_t{coords[i]} + idx[i];
      if (c < 0 || static_cast<std::uint64_t>(c) >= mp.dims[i]) {
        inside = false;
        break;
      }
      src += static_cast<std::uint64_t>(c) * mp.strides[i];
    }
    const std::uint64_t addr = swizzle_address(dst_off + linear * static_cast<std::uint64_t>(e), span);
    if (addr + static_cast<std::uint64_t>(e) > b.arena_bytes)
      fail_here(at + "swizzled destination offset " + std::to_string(addr) + " is outside shared memory");
    if (inside)
      std::memcpy(b.arena + addr, base + src, static_cast<std::size_t>(e));
    else
      std::memset(b.arena + addr, 0, static_cast<std::size_t>(e));
    for (int i = 0; i < mp.rank; ++i) {
      if (++idx[i] < mp.box[i]) break;
      idx[i] = 0;
    }
  }
  complete_tx(m, static_cast<std::uint32_t>(bytes), "tensor copy", site);
}

void wgmma(const wgmma_op& op, call_site site) {
  require_thread("wgmma");
  self().in = &op;
  enter_warpgroup(detail::group_kind::wgmma, "wgmma", site);
}

void set_max_registers(int n, call_site site) {
  require_thread("setmaxnreg");
  if (n < 24 || n > 256 || n % 8 != 0)
    fail_here("setmaxnreg at " + where(site) + ": " + std::to_string(n) + " registers is not a multiple of 8 in [24, 256]");
  self().arg = n;
  enter_warpgroup(detail::group_kind::setmaxnreg, "setmaxnreg", site);
}

}  // namespace pk::backend::host
