// The reduction dispatchers' plan cache (plan_cache.hpp).
#include "plan_cache.hpp"

#include <mutex>
#include <unordered_map>

namespace pk::reduction::detail {
namespace {
struct key {
  std::string device;
  int kind, elem_bytes;
  std::int64_t a, b, c;
  bool operator==(const key&) const = default;
};
struct key_hash {
  std::size_t operator()(const key& k) const noexcept {
    std::size_t h = std::hash<std::string>{}(k.device);
    for (std::int64_t v : {std::int64_t{k.kind}, std::int64_t{k.elem_bytes}, k.a, k.b, k.c})
      h = h * 1099511628211ull ^ std::hash<std::int64_t>{}(v);
    return h;
  }
};
// Entries kept at most (cleared when full: a long-running program with ever-new sizes stays bounded).
constexpr std::size_t max_entries = 4096;
}  // namespace

choice cached_choice(const archdb::device_desc& d, plan_kind kind, int elem_bytes, std::int64_t a, std::int64_t b,
                     std::int64_t c, const std::function<archdb::plan()>& make) {
  static std::mutex mu;
  static std::unordered_map<key, choice, key_hash> cache;
  key k{d.name, static_cast<int>(kind), elem_bytes, a, b, c};
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto it = cache.find(k); it != cache.end()) return it->second;
  }
  const archdb::plan p = make();
  choice ch;
  ch.index = p.index;
  ch.blocks_per_sm = p.occ.blocks_per_sm;
  for (std::size_t i = 0; i < p.all.size() && i < 32; ++i)
    if (p.all[i].fits) ch.fits |= 1u << i;
  if (p.index < 0) ch.why = p.why;
  std::lock_guard<std::mutex> g(mu);
  if (cache.size() >= max_entries) cache.clear();
  cache.emplace(std::move(k), ch);
  return ch;
}

}  // namespace pk::reduction::detail
