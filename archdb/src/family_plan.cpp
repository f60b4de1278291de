// The shared plan cache and the forced-policy rule (family_plan.hpp).
#include "pk/archdb/family_plan.hpp"

#include <mutex>
#include <unordered_map>
#include <vector>

namespace pk::archdb {
namespace {

struct plan_key {
  std::string device;
  std::string family;
  std::vector<std::int64_t> values;
  bool operator==(const plan_key&) const = default;
};

struct plan_key_hash {
  std::size_t operator()(const plan_key& k) const noexcept {
    // FNV-1a style mixing of the parts' standard hashes.
    constexpr std::size_t prime = 1099511628211ull;
    std::size_t h = std::hash<std::string>{}(k.device) * prime ^ std::hash<std::string>{}(k.family);
    for (std::int64_t v : k.values) h = h * prime ^ std::hash<std::int64_t>{}(v);
    return h;
  }
};

// Entries kept at most: a long-running program that sees ever-new sizes stays bounded (a plan with its
// `why` texts is a few kilobytes).
constexpr std::size_t max_entries = 4096;

std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<plan_key, std::shared_ptr<const plan>, plan_key_hash>& cache() {
  static std::unordered_map<plan_key, std::shared_ptr<const plan>, plan_key_hash> c;
  return c;
}

}  // namespace

std::shared_ptr<const plan> cached_plan(const device_desc& d, std::string_view family, std::span<const std::int64_t> key,
                                        const std::string& tuning_bucket, const std::function<plan()>& make) {
  plan_key k{d.name, std::string(family), std::vector<std::int64_t>(key.begin(), key.end())};
  {
    std::lock_guard<std::mutex> g(cache_mutex());
    if (auto it = cache().find(k); it != cache().end()) return it->second;
  }
  plan p = make();
  if (!tuning_bucket.empty()) apply_tuning_cache(d, std::string(family), tuning_bucket, p);
  auto shared = std::make_shared<const plan>(std::move(p));
  std::lock_guard<std::mutex> g(cache_mutex());
  if (cache().size() >= max_entries) cache().clear();
  return cache().emplace(std::move(k), std::move(shared)).first->second;
}

status select_policy(const plan& p, const char* forced, std::string_view fn, int& index) {
  if (forced == nullptr || *forced == '\0') {
    if (p.index < 0) return unsupported(std::string(fn) + ": no compiled policy fits: " + p.why);
    index = p.index;
    return {};
  }
  for (std::size_t i = 0; i < p.all.size(); ++i) {
    if (p.all[i].name != forced) continue;
    if (!p.all[i].fits)
      return unsupported(std::string(fn) + ": policy " + forced + " does not fit this device: " + p.all[i].reason);
    index = static_cast<int>(i);
    return {};
  }
  std::string names;
  for (const plan::considered& c : p.all) names += (names.empty() ? "" : ", ") + c.name;
  return invalid_argument(std::string(fn) + ": policy " + forced +
                          " is not a compiled candidate for this device and problem (candidates: " + names + ")");
}

plan with_choice(const plan& p, int index) {
  const plan::considered& c = p.all[static_cast<std::size_t>(index)];
  plan q;
  q.index = index;
  q.name = c.name;
  q.occ = c.occ;
  q.predicted_us = c.predicted_us;
  return q;
}

void clear_plan_cache() {
  std::lock_guard<std::mutex> g(cache_mutex());
  cache().clear();
}

}  // namespace pk::archdb
