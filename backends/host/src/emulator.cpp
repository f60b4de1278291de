// The SIMT emulator: a pool of OS threads over blocks; within a block each GPU thread is a fiber
// (Boost.Context), scheduled round-robin. A fiber runs until it reaches a block barrier, a warp or
// warpgroup collective, a named barrier or an mbarrier wait; after each pass over the runnable
// fibers the scheduler releases the mbarrier waits whose phase has completed, completes the
// collectives whose warps (warpgroups) have fully arrived, then the block barrier if every live
// thread waits at it. Anything else is divergence or a deadlock, reported as an error naming the
// block, the threads, what they wait on and the call sites.
#include "emulator_state.hpp"

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

// AddressSanitizer must be told when a thread changes stacks, and Boost.Context's fcontext fibers (the
// build Debian ships; its annotated ucontext variant needs a library built for it) do not tell it.
// Without the annotations an exception unwinding a GPU thread (an emulation error) leaves its frames'
// redzones poisoned on a pooled stack, and the fake stacks of stack-use-after-return detection mix
// between fibers. PK_HOST_FIBER_ASAN turns them on in sanitized builds; otherwise they compile to nothing.
#if defined(__SANITIZE_ADDRESS__)
#define PK_HOST_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PK_HOST_FIBER_ASAN 1
#endif
#endif
#ifndef PK_HOST_FIBER_ASAN
#define PK_HOST_FIBER_ASAN 0
#endif
#if PK_HOST_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace pk::backend::host {

thread_local thread_ctx* current_thread = nullptr;

emulator_options& options() noexcept {
  static emulator_options o;
  return o;
}

namespace {

namespace bctx = boost::context;

// ---------------------------------------------------------------------------------------------
// The sanitizer's fiber-switch protocol: switch_start just before a context switch to the stack `to`
// (`fake_stack_save` keeps the leaving context's fake stack; null when the leaving fiber ends, which
// frees it), switch_finish just after it, on the arriving stack (`from`, if not null, receives the
// stack left).
void switch_start([[maybe_unused]] void** fake_stack_save, [[maybe_unused]] const detail::stack_bounds& to) {
#if PK_HOST_FIBER_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, to.bottom, to.size);
#endif
}

void switch_finish([[maybe_unused]] void* fake_stack_save, [[maybe_unused]] detail::stack_bounds* from) {
#if PK_HOST_FIBER_ASAN
  const void* bottom = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack_save, &bottom, &size);
  if (from) *from = {bottom, size};
#endif
}

// A fiber stack returning to the pool: poisoning left by frames that never returned (Boost.Context's
// entry frame, which leaves by a jump) must not flag the next GPU thread that uses the stack.
void stack_released([[maybe_unused]] void* lowest, [[maybe_unused]] std::size_t bytes) {
#if PK_HOST_FIBER_ASAN
  ASAN_UNPOISON_MEMORY_REGION(lowest, bytes);
#endif
}

// ---------------------------------------------------------------------------------------------
// Fiber stacks: mmap'ed with a guard page, pooled per launch worker (creating a fiber per GPU thread
// per block must not cost a system call), and kept between launches in one process-wide cache: a test
// or an application on the emulator launches thousands of kernels, and mapping each stack afresh per
// launch (mmap, mprotect, the first touch of each page, munmap) made system time three times the
// emulation's own (20.5 s wall, 18.8 s system for one reduction test of 2026-12-02).
std::size_t page_bytes() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

class stack_cache {
 public:
  // Stacks kept at most: a launch takes one per GPU thread of a block per worker (1024 x the worker
  // count at most); those beyond the cap are unmapped. Only touched pages are resident (MAP_NORESERVE).
  static constexpr std::size_t max_kept = 8192;
  static stack_cache& instance() {
    static stack_cache* c = new stack_cache;  // never destroyed: a launch may end during static destruction
    return *c;
  }
  // A mapped stack of `bytes` (the guard page below it included), or null when none of that size is kept.
  void* take(std::size_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    if (bytes != bytes_ || free_.empty()) return nullptr;
    void* base = free_.back();
    free_.pop_back();
    return base;
  }
  // Keeps `bases` (stacks of `bytes`); stacks of another size kept before are unmapped (the size is an
  // emulator option and may change between launches).
  void give_back(std::size_t bytes, const std::vector<void*>& bases) {
    std::vector<void*> stale;
    std::size_t stale_bytes = 0;
    std::vector<void*> excess;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (bytes != bytes_) {
        stale.swap(free_);
        stale_bytes = bytes_;
        bytes_ = bytes;
      }
      for (void* b : bases) (free_.size() < max_kept ? free_ : excess).push_back(b);
    }
    for (void* b : stale) ::munmap(b, stale_bytes + page_bytes());
    for (void* b : excess) ::munmap(b, bytes + page_bytes());
  }

 private:
  std::mutex mu_;
  std::size_t bytes_ = 0;
  std::vector<void*> free_;
};

class stack_pool {
 public:
  explicit stack_pool(std::size_t bytes) : bytes_(round_to_page(bytes)) {}
  stack_pool(const stack_pool&) = delete;
  stack_pool& operator=(const stack_pool&) = delete;
  ~stack_pool() { stack_cache::instance().give_back(bytes_, all_); }
  bctx::stack_context take() {
    void* base;
    if (!free_.empty()) {
      base = free_.back();
      free_.pop_back();
    } else {
      base = stack_cache::instance().take(bytes_);
      if (base == nullptr) {
        base = ::mmap(nullptr, bytes_ + page_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
        if (base == MAP_FAILED) throw std::bad_alloc();
        ::mprotect(base, page_bytes(), PROT_NONE);  // guard page: a stack overflow faults instead of corrupting
      }
      all_.push_back(base);
    }
    bctx::stack_context sc;
    sc.size = bytes_;
    sc.sp = static_cast<char*>(base) + page_bytes() + bytes_;
    return sc;
  }
  void give_back(bctx::stack_context& sc) {
    stack_released(static_cast<char*>(sc.sp) - bytes_, bytes_);
    free_.push_back(static_cast<char*>(sc.sp) - bytes_ - page_bytes());
  }

 private:
  static std::size_t round_to_page(std::size_t b) { return (b + page_bytes() - 1) / page_bytes() * page_bytes(); }
  std::size_t bytes_;
  std::vector<void*> free_;
  std::vector<void*> all_;
};

struct pooled_stack_allocator {
  stack_pool* pool;
  detail::stack_bounds* bounds;  // receives the stack, for the sanitizer's fiber-switch annotations
  bctx::stack_context allocate() {
    bctx::stack_context sc = pool->take();
    *bounds = {static_cast<char*>(sc.sp) - sc.size, sc.size};
    return sc;
  }
  void deallocate(bctx::stack_context& sc) noexcept { pool->give_back(sc); }
};

using detail::lane;
using detail::lane_status;

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

const char* group_kind_name(detail::group_kind k) {
  switch (k) {
    case detail::group_kind::wgmma: return "wgmma";
    case detail::group_kind::setmaxnreg: return "setmaxnreg";
  }
  return "?";
}

// A thread that is suspended but may still be released by another thread's progress (so a warp or
// warpgroup collective it has not reached yet is not divergent until the whole block is stuck).
bool may_arrive_later(lane_status s) {
  return s == lane_status::ready || s == lane_status::at_mbarrier || s == lane_status::at_named;
}

}  // namespace

std::string block_state::block_name() const {
  std::ostringstream o;
  o << cfg->kernel_name << " block (" << block_idx.x << "," << block_idx.y << "," << block_idx.z << ")";
  return o.str();
}

namespace detail {

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

lane& self() { return *static_cast<lane*>(current_thread->detail_lane); }

void yield_to_scheduler(lane& l) {
  switch_start(&l.fake_stack, l.sched_stack);
  l.sched = std::move(l.sched).resume();
  switch_finish(l.fake_stack, &l.sched_stack);
  current_thread = &l.tc;
  if (l.abandon) throw emulation_failure{};
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

}  // namespace detail

namespace {

using detail::fail_here;
using detail::ranges;
using detail::require_thread;
using detail::same_site;
using detail::self;
using detail::where;
using detail::yield_to_scheduler;

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
// records divergence in b.error. Lanes that may still arrive (runnable, or waiting on an mbarrier or a
// named barrier that another thread can complete) defer the decision.
bool resolve_warp(block_state& b, int w) {
  const int n = static_cast<int>(b.lanes.size());
  const int first = w * b.warp_size;
  const int last = std::min(n, first + b.warp_size);
  int at_warp = 0;
  for (int i = first; i < last; ++i) {
    if (may_arrive_later(b.lanes[i].st)) return false;
    at_warp += b.lanes[i].st == lane_status::at_warp;
  }
  if (at_warp == 0) return false;
  const lane& lead = [&]() -> const lane& {
    for (int i = first; i < last; ++i)
      if (b.lanes[i].st == lane_status::at_warp) return b.lanes[i];
    return b.lanes[first];
  }();
  std::vector<int> same, other_coll, group, barrier, exited;
  for (int i = first; i < last; ++i) {
    const lane& l = b.lanes[i];
    const int ln = i - first;
    if (l.st == lane_status::at_warp)
      (l.kind == lead.kind && same_site(l.site, lead.site) && l.width == lead.width ? same : other_coll).push_back(ln);
    else if (l.st == lane_status::at_warpgroup)
      group.push_back(ln);
    else if (l.st == lane_status::at_barrier)
      barrier.push_back(ln);
    else
      exited.push_back(ln);
  }
  if (!other_coll.empty() || !group.empty() || !barrier.empty() || !exited.empty()) {
    std::ostringstream o;
    o << "warp " << w << ": divergent " << kind_name(lead.kind) << " at " << where(lead.site) << ": lanes "
      << ranges(same) << " arrived";
    if (!other_coll.empty()) {
      const lane& x = b.lanes[first + other_coll.front()];
      o << "; lanes " << ranges(other_coll) << " wait at " << kind_name(x.kind) << " " << where(x.site);
    }
    if (!group.empty()) {
      const lane& x = b.lanes[first + group.front()];
      o << "; lanes " << ranges(group) << " wait at " << group_kind_name(x.gkind) << " " << where(x.site);
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

// Completes the collective of warpgroup `g` (threads [128 g, 128 g + 128)) if all its threads wait at
// it; records divergence in b.error. Threads that may still arrive defer the decision, and so do
// threads at a warp collective (their warp completes it first, or reports its own divergence).
bool resolve_warpgroup(block_state& b, int g) {
  const int first = g * detail::warpgroup_threads;
  const int last = std::min(static_cast<int>(b.lanes.size()), first + detail::warpgroup_threads);
  int arrived = 0;
  for (int i = first; i < last; ++i) {
    const lane_status s = b.lanes[i].st;
    if (may_arrive_later(s) || s == lane_status::at_warp) return false;
    arrived += s == lane_status::at_warpgroup;
  }
  if (arrived == 0) return false;
  const lane* lead = nullptr;
  for (int i = first; i < last && !lead; ++i)
    if (b.lanes[i].st == lane_status::at_warpgroup) lead = &b.lanes[i];
  std::vector<int> same, other, barrier, exited;
  for (int i = first; i < last; ++i) {
    const lane& l = b.lanes[i];
    if (l.st == lane_status::at_warpgroup)
      (l.gkind == lead->gkind && same_site(l.site, lead->site) ? same : other).push_back(i);
    else if (l.st == lane_status::at_barrier)
      barrier.push_back(i);
    else
      exited.push_back(i);
  }
  if (!other.empty() || !barrier.empty() || !exited.empty()) {
    std::ostringstream o;
    o << "warpgroup " << g << " (threads " << first << "-" << last - 1 << "): divergent " << group_kind_name(lead->gkind)
      << " at " << where(lead->site) << ": threads " << ranges(same) << " arrived";
    if (!other.empty()) {
      const lane& x = b.lanes[other.front()];
      o << "; threads " << ranges(other) << " wait at " << group_kind_name(x.gkind) << " " << where(x.site);
    }
    if (!barrier.empty())
      o << "; threads " << ranges(barrier) << " wait at the block barrier " << where(b.lanes[barrier.front()].site);
    if (!exited.empty()) o << "; threads " << ranges(exited) << " have exited";
    o << " (every thread of the warpgroup must reach the same " << group_kind_name(lead->gkind) << ")";
    b.fail(o.str());
    return false;
  }
  switch (lead->gkind) {
    case detail::group_kind::wgmma:
      if (!detail::complete_wgmma(b, first)) return false;
      break;
    case detail::group_kind::setmaxnreg:
      for (int i = first; i < last; ++i) {
        if (b.lanes[i].arg != lead->arg) {
          b.fail("warpgroup " + std::to_string(g) + ": setmaxnreg at " + where(lead->site) + ": thread " +
                 std::to_string(i) + " asks for " + std::to_string(b.lanes[i].arg) + " registers, thread " +
                 std::to_string(first) + " for " + std::to_string(lead->arg) +
                 " (the count must be the same for the whole warpgroup)");
          return false;
        }
      }
      break;
  }
  for (int i = first; i < last; ++i) b.lanes[i].st = lane_status::ready;
  return true;
}

// Threads waiting on an mbarrier whose phase has completed become runnable again.
bool release_mbarrier_waiters(block_state& b) {
  bool released = false;
  for (lane& l : b.lanes) {
    if (l.st != lane_status::at_mbarrier) continue;
    if (detail::mbarrier_wait_done(b, l)) {
      l.st = lane_status::ready;
      released = true;
    }
    if (!b.error.empty()) return false;
  }
  return released;
}

// No warp collective could complete: release the block barrier if every live thread waits at it.
// Threads at another barrier or exited make it a deadlock (reported here); threads still waiting on
// something else leave the decision to the stall report.
bool resolve_barrier(block_state& b) {
  std::vector<int> waiting, exited;
  const lane* lead = nullptr;
  std::vector<int> elsewhere;
  bool pending_elsewhere = false;
  for (int i = 0; i < static_cast<int>(b.lanes.size()); ++i) {
    const lane& l = b.lanes[i];
    if (l.st == lane_status::at_barrier) {
      if (!lead) lead = &l;
      (same_site(l.site, lead->site) ? waiting : elsewhere).push_back(i);
    } else if (l.st == lane_status::done) {
      exited.push_back(i);
    } else if (l.st != lane_status::failed) {
      pending_elsewhere = true;
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
  if (pending_elsewhere) return false;
  for (int i : waiting) b.lanes[i].st = lane_status::ready;
  return true;
}

// What a suspended thread waits on, for the stall report (threads with equal text are grouped).
std::string waits_on(const block_state& b, const lane& l) {
  const int t = l.tc.linear_tid;
  switch (l.st) {
    case lane_status::at_barrier: return "wait at the block barrier " + where(l.site);
    case lane_status::at_warp:
      return "wait at " + std::string(kind_name(l.kind)) + " " + where(l.site) + " (warp " +
             std::to_string(t / b.warp_size) + ")";
    case lane_status::at_warpgroup:
      return "wait at " + std::string(group_kind_name(l.gkind)) + " " + where(l.site) + " (warpgroup " +
             std::to_string(t / detail::warpgroup_threads) + ")";
    case lane_status::at_mbarrier:
      return "wait at " + where(l.site) + " for the phase of parity " + std::to_string(l.arg) + " of the " +
             detail::describe_mbarrier(b, l.mbar);
    case lane_status::at_named: {
      const detail::named_barrier_phase& p = b.named[l.named_id];
      return "wait at named barrier " + std::to_string(l.named_id) + " " + where(l.site) + ": " +
             std::to_string(p.arrived) + " of " + std::to_string(p.count) + " threads arrived";
    }
    case lane_status::done: return "have exited";
    case lane_status::ready: return "are runnable";
    case lane_status::failed: return "have failed";
  }
  return "?";
}

// Nothing can run and nothing can complete: a deadlock. Names every group of waiting threads.
void report_stall(block_state& b) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const lane& l : b.lanes) {
    if (l.st == lane_status::done) continue;
    std::string w = waits_on(b, l);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == w; });
    if (it == groups.end()) {
      groups.emplace_back(std::move(w), std::vector<int>{});
      it = groups.end() - 1;
    }
    it->second.push_back(l.tc.linear_tid);
  }
  std::vector<int> exited;
  for (const lane& l : b.lanes)
    if (l.st == lane_status::done) exited.push_back(l.tc.linear_tid);
  std::ostringstream o;
  o << "deadlock: no thread can make progress";
  for (const auto& [what, ids] : groups) o << "; threads " << ranges(ids) << " " << what;
  if (!exited.empty()) o << "; threads " << ranges(exited) << " have exited";
  b.fail(o.str());
}

class worker {
 public:
  worker(const launch_config& cfg, std::size_t stack_bytes) : cfg_(cfg), stacks_(stack_bytes) {
    arena_.reset(static_cast<std::byte*>(
        ::operator new(static_cast<std::size_t>(cfg.smem_limit_per_block) + 16, std::align_val_t{arena_align})));
  }

  // Runs one block; returns an error message or "".
  std::string run_block(dim3 block_idx, const std::function<void()>& body) {
    const int n = static_cast<int>(cfg_.block.x * cfg_.block.y * cfg_.block.z);
    block_state b;
    b.cfg = &cfg_;
    b.warp_size = cfg_.warp_size;
    b.block_idx = block_idx;
    b.arena = arena_.get();
    b.arena_bytes = static_cast<std::size_t>(cfg_.smem_limit_per_block);
    b.used = cfg_.dynamic_smem;
    b.mbarrier_magic = next_mbarrier_magic();
    if (options().poison_shared) std::memset(b.arena, 0xFF, cfg_.dynamic_smem);
    b.guard_after_used();
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
      l.fiber = bctx::fiber(std::allocator_arg, pooled_stack_allocator{&stacks_, &l.own_stack},
                            [&l, &body, &b](bctx::fiber&& s) {
        switch_finish(nullptr, &l.sched_stack);
        l.sched = std::move(s);
        try {
          if (l.abandon) throw detail::emulation_failure{};
          body();
          l.st = lane_status::done;
        } catch (const detail::emulation_failure&) {
          l.st = lane_status::failed;
        } catch (const std::exception& e) {
          b.fail("thread " + std::to_string(l.tc.linear_tid) + ": exception: " + e.what());
          l.st = lane_status::failed;
        }
        switch_start(nullptr, l.sched_stack);
        return std::move(l.sched);
      });
    }
    const int warps = (n + b.warp_size - 1) / b.warp_size;
    const int groups = (n + detail::warpgroup_threads - 1) / detail::warpgroup_threads;
    for (;;) {
      for (lane& l : b.lanes) {
        if (l.st != lane_status::ready) continue;
        resume(l);
        if (!b.error.empty()) break;
      }
      if (!b.error.empty()) break;
      bool resolved = release_mbarrier_waiters(b);
      for (int w = 0; w < warps && b.error.empty(); ++w) resolved |= resolve_warp(b, w);
      for (int g = 0; g < groups && b.error.empty(); ++g) resolved |= resolve_warpgroup(b, g);
      if (!b.error.empty()) break;
      if (resolved) continue;
      // Threads released during the pass (a named barrier completed by a later thread) run next.
      if (std::any_of(b.lanes.begin(), b.lanes.end(), [](const lane& l) { return l.st == lane_status::ready; }))
        continue;
      if (resolve_barrier(b)) continue;
      if (!b.error.empty()) break;
      if (std::all_of(b.lanes.begin(), b.lanes.end(), [](const lane& l) { return l.st == lane_status::done; }))
        break;  // every thread has finished
      report_stall(b);
      break;
    }
    // Threads still suspended (only after an error) are resumed once more to unwind their stacks: each
    // throws emulation_failure where it waits (or, if it never ran, before the kernel body). Boost's
    // own unwinding in the fiber's destructor would switch stacks behind the sanitizer's back.
    for (lane& l : b.lanes) {
      if (!l.fiber) continue;  // finished
      l.abandon = true;
      resume(l);
    }
    b.lanes.clear();
    if (b.error.empty()) {
      const std::size_t at = b.guard_broken_at();
      if (at < b.arena_bytes)
        b.fail("shared memory: a thread wrote at offset " + std::to_string(at) + ", past the block's " + std::to_string(b.used) +
               " bytes (the launch's dynamic size and the static allocations): on a GPU, outside the block's allocation");
    }
    return b.error;
  }

 private:
  // The arena is aligned like the swizzle patterns' repeat (1024 bytes for the 128-byte swizzle), so
  // shared-window offsets have the address bits the hardware's swizzles read.
  static constexpr std::size_t arena_align = 1024;
  struct aligned_delete {
    void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{arena_align}); }
  };
  // A value per block run (never the poison pattern or zero), so barriers from earlier blocks read as
  // uninitialised: the run counter times Knuth's multiplicative-hash constant, XOR "mbar".
  static std::uint32_t next_mbarrier_magic() {
    static std::atomic<std::uint32_t> counter{0};
    for (;;) {
      const std::uint32_t m = (counter.fetch_add(1, std::memory_order_relaxed) * 2654435761u) ^ 0x6d626172u;
      if (m != 0 && m != 0xFFFFFFFFu) return m;
    }
  }
  // Runs GPU thread `l` until it suspends or finishes.
  void resume(lane& l) {
    current_thread = &l.tc;
    switch_start(&sched_fake_stack_, l.own_stack);
    l.fiber = std::move(l.fiber).resume();
    switch_finish(sched_fake_stack_, nullptr);
    current_thread = nullptr;
  }

  const launch_config& cfg_;
  void* sched_fake_stack_ = nullptr;  // the worker thread's fake stack while a GPU thread runs
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
  b.guard_after_used();
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
