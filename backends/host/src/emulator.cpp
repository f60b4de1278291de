// The SIMT emulator: a pool of OS threads over blocks; within a block each GPU thread is a fiber
// (Boost.Context), scheduled round-robin. A fiber runs until it reaches a block barrier or a warp
// collective; when no fiber can run, the scheduler completes the collectives whose warps have fully
// arrived, then the barrier if every live thread waits at it. Anything else is divergence or a
// deadlock, reported as an error naming the block, the threads and the call sites.
#include <pk/backend/host/launch.hpp>

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pk::backend::host {

thread_local thread_ctx* current_thread = nullptr;

emulator_options& options() noexcept {
  static emulator_options o;
  return o;
}

namespace {

namespace bctx = boost::context;

// ---------------------------------------------------------------------------------------------
// Fiber stacks: mmap'ed with a guard page, pooled per launch worker (creating a fiber per GPU thread
// per block must not cost a system call).
class stack_pool {
 public:
  explicit stack_pool(std::size_t bytes) : bytes_(round_to_page(bytes)) {}
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;
  ~stack_pool() {
    for (void* base : all_) ::munmap(base, bytes_ + page());
  }
  bctx::stack_context take() {
    void* base;
    if (!free_.empty()) {
      base = free_.back();
      free_.pop_back();
    } else {
      base = ::mmap(nullptr, bytes_ + page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
      if (base == MAP_FAILED) throw std::bad_alloc();
      ::mprotect(base, page(), PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
      all_.push_back(base);
    }
    bctx::stack_context sc;
    sc.size = bytes_;
    sc.sp = static_cast<char*>(base) + page() + bytes_;
    return sc;
  }
  void give_back(bctx::stack_context& sc) { free_.push_back(static_cast<char*>(sc.sp) - bytes_ - page()); }

 private:
  static std::size_t page() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }
  static std::size_t round_to_page(std::size_t b) { return (b + page() - 1) / page() * page(); }
  std::size_t bytes_;
  std::vector<void*> free_;
  std::vector<void*> all_;
};

struct pooled_stack_allocator {
  stack_pool* pool;
  bctx::stack_context allocate() { return pool->take(); }
  void deallocate(bctx::stack_context& sc) noexcept { pool->give_back(sc); }
};

// Thrown inside a fiber after the error was recorded; unwinds the GPU thread's stack.
struct emulation_failure {};

enum class lane_status : std::uint8_t { ready, at_barrier, at_warp, done, failed };

struct lane {
  lane_status st = lane_status::ready;
  bctx::fiber fiber;  // the GPU thread while it is suspended
  bctx::fiber sched;  // the scheduler while the GPU thread runs
  thread_ctx tc;
  // The pending barrier or collective.
  call_site site;
  collective_kind kind = collective_kind::sync;
  const void* in = nullptr;
  void* out = nullptr;
  std::size_t bytes = 0;
  int width = 0;
  int arg = 0;
  bool pred = false;
  std::uint64_t mask_result = 0;
  warp_custom_fn fn = nullptr;
  const void* params = nullptr;
};

const char* kind_name(collective_kind k) {
  switch (k) {
    case collective_kind::shfl_idx: return "shfl";
    case collective_kind::shfl_up: return "shfl_up";
    case collective_kind::shfl_down: return "shfl_down";
    case collective_kind::shfl_xor: return "shfl_xor";
    case collective_kind::ballot: return "ballot";
    case collective_kind::sync: return "warp sync";
    case collective_kind::custom: return "warp-wide instruction";
  }
  return "?";
}

std::string where(const call_site& s) {
  std::string f = s.file ? s.file : "?";
  std::ostringstream o;
  o << f << ":" << s.line;
  if (s.what && *s.what) o << " (" << s.what << ")";
  return o.str();
}

bool same_site(const call_site& a, const call_site& b) {
  return a.line == b.line && (a.file == b.file || (a.file && b.file && std::strcmp(a.file, b.file) == 0));
}

// "0-15,17,20-31"
std::string ranges(const std::vector<int>& ids) {
  std::ostringstream o;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (i) o << ",";
    o << ids[i];
    if (j > i) o << "-" << ids[j];
    i = j + 1;
  }
  return o.str();
}

}  // namespace

struct block_state {
  std::vector<lane> lanes;
  int warp_size = 32;
  dim3 block_idx;
  const launch_config* cfg = nullptr;
  // Shared memory: [0, dynamic) is the dynamic region, static allocations follow.
  std::byte* arena = nullptr;
  std::size_t used = 0;
  std::vector<std::pair<const void*, std::size_t>> statics;
  std::string error;

  std::string block_name() const {
    std::ostringstream o;
    o << cfg->kernel_name << " block (" << block_idx.x << "," << block_idx.y << "," << block_idx.z << ")";
    return o.str();
  }
  void fail(const std::string& what) {
    if (error.empty()) error = block_name() + ": " + what;
  }
};

namespace {

lane& self() { return *static_cast<lane*>(current_thread->detail_lane); }

void yield_to_scheduler(lane& l) {
  l.sched = std::move(l.sched).resume();
  current_thread = &l.tc;
}

[[noreturn]] void fail_here(const std::string& what) {
  lane& l = self();
  l.tc.block->fail("thread " + std::to_string(l.tc.linear_tid) + ": " + what);
  throw emulation_failure{};
}

thread_ctx& require_thread(const char* api) {
  if (current_thread == nullptr) {
    // Called outside an emulated kernel: there is no GPU thread to report; this is a usage error.
    throw std::logic_error(std::string("pk host emulator: ") + api + " called outside a kernel");
  }
  return *current_thread;
}

int source_lane(collective_kind k, int lane_id, int width, int arg) {
  const int seg_base = lane_id & ~(width - 1);
  const int in_seg = lane_id - seg_base;
  switch (k) {
    case collective_kind::shfl_idx: return seg_base + (((arg % width) + width) % width);
    case collective_kind::shfl_up: return in_seg >= arg ? lane_id - arg : lane_id;
    case collective_kind::shfl_down: return in_seg + arg < width ? lane_id + arg : lane_id;
    case collective_kind::shfl_xor: {
      const int src = lane_id ^ arg;
      return src >= seg_base + width ? lane_id : src;  // later groups are not visible (CUDA semantics)
    }
    default: return lane_id;
  }
}

// Completes the collective of warp `w` if all its live lanes wait at it. Returns true if resolved;
// records divergence in b.error.
bool resolve_warp(block_state& b, int w) {
  const int n = static_cast<int>(b.lanes.size());
  const int first = w * b.warp_size;
  const int last = std::min(n, first + b.warp_size);
  int at_warp = 0;
  for (int i = first; i < last; ++i) at_warp += b.lanes[i].st == lane_status::at_warp;
  if (at_warp == 0) return false;
  const lane& lead = [&]() -> const lane& {
    for (int i = first; i < last; ++i)
      if (b.lanes[i].st == lane_status::at_warp) return b.lanes[i];
    return b.lanes[first];
  }();
  std::vector<int> same, other_coll, barrier, exited;
  for (int i = first; i < last; ++i) {
    const lane& l = b.lanes[i];
    const int ln = i - first;
    if (l.st == lane_status::at_warp)
      (l.kind == lead.kind && same_site(l.site, lead.site) && l.width == lead.width ? same : other_coll).push_back(ln);
    else if (l.st == lane_status::at_barrier)
      barrier.push_back(ln);
    else
      exited.push_back(ln);
  }
  if (!other_coll.empty() || !barrier.empty() || !exited.empty()) {
    std::ostringstream o;
    o << "warp " << w << ": divergent " << kind_name(lead.kind) << " at " << where(lead.site) << ": lanes "
      << ranges(same) << " arrived";
    if (!other_coll.empty()) {
      const lane& x = b.lanes[first + other_coll.front()];
      o << "; lanes " << ranges(other_coll) << " wait at " << kind_name(x.kind) << " " << where(x.site);
    }
    if (!barrier.empty())
      o << "; lanes " << ranges(barrier) << " wait at the block barrier " << where(b.lanes[first + barrier.front()].site);
    if (!exited.empty()) o << "; lanes " << ranges(exited) << " have exited";
    o << " (every lane of the warp must reach the same collective)";
    b.fail(o.str());
    return false;
  }
  const int lanes = last - first;
  switch (lead.kind) {
    case collective_kind::shfl_idx:
    case collective_kind::shfl_up:
    case collective_kind::shfl_down:
    case collective_kind::shfl_xor: {
      for (int i = 0; i < lanes; ++i) {
        lane& l = b.lanes[first + i];
        const int src = source_lane(l.kind, i, l.width, l.arg);
        if (src < 0 || src >= lanes) {
          std::ostringstream o;
          o << "warp " << w << " lane " << i << ": " << kind_name(l.kind) << " at " << where(l.site) << " reads lane "
            << src << ", which does not exist in this block";
          b.fail(o.str());
          return false;
        }
        if (b.lanes[first + src].bytes != l.bytes) {
          b.fail("warp " + std::to_string(w) + ": shuffle operand sizes differ between lanes at " + where(l.site));
          return false;
        }
      }
      // Gather first, then scatter: `out` may alias another lane's `in`? No (each lane's own stack),
      // but a lane's in and out may be the same object, so stage through a buffer.
      std::vector<std::byte> staged(static_cast<std::size_t>(lanes) * lead.bytes);
      for (int i = 0; i < lanes; ++i) {
        const lane& l = b.lanes[first + i];
        const int src = source_lane(l.kind, i, l.width, l.arg);
        std::memcpy(staged.data() + static_cast<std::size_t>(i) * l.bytes, b.lanes[first + src].in, l.bytes);
      }
      for (int i = 0; i < lanes; ++i) {
        lane& l = b.lanes[first + i];
        std::memcpy(l.out, staged.data() + static_cast<std::size_t>(i) * l.bytes, l.bytes);
      }
      break;
    }
    case collective_kind::ballot: {
      std::uint64_t m = 0;
      for (int i = 0; i < lanes; ++i)
        if (b.lanes[first + i].pred) m |= std::uint64_t{1} << i;
      for (int i = 0; i < lanes; ++i) b.lanes[first + i].mask_result = m;
      break;
    }
    case collective_kind::sync: break;
    case collective_kind::custom: {
      std::vector<const void*> ins(lanes);
      std::vector<void*> outs(lanes);
      for (int i = 0; i < lanes; ++i) {
        ins[i] = b.lanes[first + i].in;
        outs[i] = b.lanes[first + i].out;
      }
      lead.fn(lead.params, lanes, ins.data(), outs.data());
      break;
    }
  }
  for (int i = first; i < last; ++i) b.lanes[i].st = lane_status::ready;
  return true;
}

// All fibers are blocked and no warp collective could complete: release the barrier or report.
bool resolve_barrier(block_state& b) {
  std::vector<int> waiting, exited;
  const lane* lead = nullptr;
  std::vector<int> elsewhere;
  for (int i = 0; i < static_cast<int>(b.lanes.size()); ++i) {
    const lane& l = b.lanes[i];
    if (l.st == lane_status::at_barrier) {
      if (!lead) lead = &l;
      (same_site(l.site, lead->site) ? waiting : elsewhere).push_back(i);
    } else if (l.st == lane_status::done) {
      exited.push_back(i);
    }
  }
  if (!lead) return false;
  if (!elsewhere.empty() || !exited.empty()) {
    std::ostringstream o;
    o << "block barrier at " << where(lead->site) << " cannot complete: threads " << ranges(waiting) << " wait there";
    if (!elsewhere.empty())
      o << "; threads " << ranges(elsewhere) << " wait at another barrier " << where(b.lanes[elsewhere.front()].site);
    if (!exited.empty()) o << "; threads " << ranges(exited) << " have exited";
    o << " (deadlock: every live thread of the block must reach the same barrier)";
    b.fail(o.str());
    return false;
  }
  for (int i : waiting) b.lanes[i].st = lane_status::ready;
  return true;
}

class worker {
 public:
  worker(const launch_config& cfg, std::size_t stack_bytes) : cfg_(cfg), stacks_(stack_bytes) {
    arena_.reset(static_cast<std::byte*>(::operator new(static_cast<std::size_t>(cfg.smem_limit_per_block) + 16,
                                                        std::align_val_t{16})));
  }

  // Runs one block; returns an error message or "".
  std::string run_block(dim3 block_idx, const std::function<void()>& body) {
    const int n = static_cast<int>(cfg_.block.x * cfg_.block.y * cfg_.block.z);
    block_state b;
    b.cfg = &cfg_;
    b.warp_size = cfg_.warp_size;
    b.block_idx = block_idx;
    b.arena = arena_.get();
    b.used = cfg_.dynamic_smem;
    if (options().poison_shared) std::memset(b.arena, 0xFF, cfg_.dynamic_smem);
    b.lanes.resize(static_cast<std::size_t>(n));
    for (int t = 0; t < n; ++t) {
      lane& l = b.lanes[t];
      l.tc.thread_idx = {t % cfg_.block.x, (t / cfg_.block.x) % cfg_.block.y, t / (cfg_.block.x * cfg_.block.y)};
      l.tc.block_idx = block_idx;
      l.tc.block_dim = cfg_.block;
      l.tc.grid_dim = cfg_.grid;
      l.tc.linear_tid = t;
      l.tc.warp_size = cfg_.warp_size;
      l.tc.block = &b;
      l.tc.detail_lane = &l;
      l.fiber = bctx::fiber(std::allocator_arg, pooled_stack_allocator{&stacks_}, [&l, &body, &b](bctx::fiber&& s) {
        l.sched = std::move(s);
        try {
          body();
          l.st = lane_status::done;
        } catch (const emulation_failure&) {
          l.st = lane_status::failed;
        } catch (const std::exception& e) {
          b.fail("thread " + std::to_string(l.tc.linear_tid) + ": exception: " + e.what());
          l.st = lane_status::failed;
        }
        return std::move(l.sched);
      });
    }
    for (;;) {
      bool ran = false;
      for (lane& l : b.lanes) {
        if (l.st != lane_status::ready) continue;
        ran = true;
        current_thread = &l.tc;
        l.fiber = std::move(l.fiber).resume();
        current_thread = nullptr;
        if (!b.error.empty()) break;
      }
      if (!b.error.empty()) break;
      bool resolved = false;
      const int warps = (n + b.warp_size - 1) / b.warp_size;
      for (int w = 0; w < warps && b.error.empty(); ++w) resolved |= resolve_warp(b, w);
      if (!b.error.empty()) break;
      if (resolved) continue;
      if (resolve_barrier(b)) continue;
      if (!b.error.empty()) break;
      if (!ran) break;  // every thread has finished
    }
    // Suspended fibers (only after an error) are unwound by their destructors here.
    b.lanes.clear();
    return b.error;
  }

 private:
  struct aligned_delete {
    void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{16}); }
  };
  const launch_config& cfg_;
  stack_pool stacks_;
  std::unique_ptr<std::byte, aligned_delete> arena_;
};

std::string fmt_dim(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Device-side entry points.

void warp_shuffle(collective_kind kind, const void* in, void* out, std::size_t bytes, int width, int arg,
                  call_site site) {
  require_thread("warp shuffle");
  lane& l = self();
  if (width < 1 || width > l.tc.warp_size || (width & (width - 1)) != 0)
    fail_here("shuffle width " + std::to_string(width) + " at " + where(site) + " must be a power of two <= " +
              std::to_string(l.tc.warp_size));
  l.kind = kind;
  l.in = in;
  l.out = out;
  l.bytes = bytes;
  l.width = width;
  l.arg = arg;
  l.site = site;
  l.st = lane_status::at_warp;
  yield_to_scheduler(l);
}

std::uint64_t warp_ballot(bool pred, call_site site) {
  require_thread("warp ballot");
  lane& l = self();
  l.kind = collective_kind::ballot;
  l.pred = pred;
  l.width = l.tc.warp_size;
  l.site = site;
  l.st = lane_status::at_warp;
  yield_to_scheduler(l);
  return l.mask_result;
}

void warp_sync(call_site site) {
  require_thread("warp sync");
  lane& l = self();
  l.kind = collective_kind::sync;
  l.width = l.tc.warp_size;
  l.site = site;
  l.st = lane_status::at_warp;
  yield_to_scheduler(l);
}

void warp_custom(warp_custom_fn fn, const void* params, const void* in, void* out, call_site site) {
  require_thread("warp-wide instruction");
  lane& l = self();
  l.kind = collective_kind::custom;
  l.fn = fn;
  l.params = params;
  l.in = in;
  l.out = out;
  l.width = l.tc.warp_size;
  l.site = site;
  l.st = lane_status::at_warp;
  yield_to_scheduler(l);
}

void block_sync(call_site site) {
  require_thread("block barrier");
  lane& l = self();
  l.site = site;
  l.st = lane_status::at_barrier;
  yield_to_scheduler(l);
}

void* shared_static(const void* key, std::size_t bytes, std::size_t align, call_site site) {
  thread_ctx& t = require_thread("shared memory");
  block_state& b = *t.block;
  for (const auto& [k, off] : b.statics)
    if (k == key) return b.arena + off;
  const std::size_t off = (b.used + align - 1) / align * align;
  if (static_cast<std::int64_t>(off + bytes) > b.cfg->smem_limit_per_block) {
    fail_here("shared memory at " + where(site) + ": " + std::to_string(off + bytes) +
              " bytes (static + dynamic) exceed the impersonated device's limit of " +
              std::to_string(b.cfg->smem_limit_per_block) + " bytes per block");
  }
  if (options().poison_shared) std::memset(b.arena + off, 0xFF, bytes);
  b.statics.emplace_back(key, off);
  b.used = off + bytes;
  return b.arena + off;
}

void* shared_dynamic() noexcept { return current_thread ? current_thread->block->arena : nullptr; }

std::size_t shared_dynamic_bytes() noexcept { return current_thread ? current_thread->block->cfg->dynamic_smem : 0; }

void trap(const char* message, call_site site) { fail_here(std::string("trap at ") + where(site) + ": " + message); }

// ---------------------------------------------------------------------------------------------
// Grid execution.

pk::status launch(const launch_config& cfg, const std::function<void()>& body) {
  const std::uint64_t threads = std::uint64_t{cfg.block.x} * cfg.block.y * cfg.block.z;
  const std::uint64_t blocks = std::uint64_t{cfg.grid.x} * cfg.grid.y * cfg.grid.z;
  const std::string name = cfg.kernel_name;
  if (threads == 0 || blocks == 0)
    return {errc::invalid_argument, name + ": grid " + fmt_dim(cfg.grid) + " and block " + fmt_dim(cfg.block) +
                                        " must have every dimension >= 1"};
  if (threads > static_cast<std::uint64_t>(cfg.max_threads_per_block))
    return {errc::invalid_argument, name + ": block " + fmt_dim(cfg.block) + " has " + std::to_string(threads) +
                                        " threads, above the impersonated device's limit of " +
                                        std::to_string(cfg.max_threads_per_block)};
  if (cfg.warp_size != 32 && cfg.warp_size != 64)
    return {errc::invalid_argument, name + ": warp size " + std::to_string(cfg.warp_size) + " must be 32 or 64"};
  if (static_cast<std::int64_t>(cfg.dynamic_smem) > cfg.smem_limit_per_block)
    return {errc::invalid_argument, name + ": dynamic shared memory " + std::to_string(cfg.dynamic_smem) +
                                        " bytes exceeds the impersonated device's limit of " +
                                        std::to_string(cfg.smem_limit_per_block) + " bytes per block"};
  if (current_thread != nullptr)
    return {errc::unsupported, name + ": launching a kernel from inside a kernel is not supported by the emulator"};

  unsigned nworkers = options().workers ? options().workers : std::max(1u, std::thread::hardware_concurrency());
  nworkers = static_cast<unsigned>(std::min<std::uint64_t>(nworkers, blocks));
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex err_mu;
  std::string first_error;
  auto work = [&]() {
    try {
      worker w(cfg, options().fiber_stack_bytes);
      for (;;) {
        if (stop.load(std::memory_order_relaxed)) return;
        const std::uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
        if (id >= blocks) return;
        const dim3 bi{static_cast<unsigned>(id % cfg.grid.x), static_cast<unsigned>((id / cfg.grid.x) % cfg.grid.y),
                      static_cast<unsigned>(id / (std::uint64_t{cfg.grid.x} * cfg.grid.y))};
        std::string e = w.run_block(bi, body);
        if (!e.empty()) {
          std::lock_guard<std::mutex> g(err_mu);
          if (first_error.empty()) first_error = std::move(e);
          stop = true;
          return;
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> g(err_mu);
      if (first_error.empty()) first_error = name + ": emulator failure: " + e.what();
      stop = true;
    }
  };
  if (nworkers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(nworkers);
    for (unsigned i = 0; i < nworkers; ++i) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  if (!first_error.empty()) return {errc::emulation_error, first_error};
  return {};
}

}  // namespace pk::backend::host
