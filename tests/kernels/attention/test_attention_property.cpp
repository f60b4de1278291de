// Property test: random valid attention problems against the double-precision reference with the
// two-reference rule (attention_case.hpp), on every backend. Problems mix dtypes, head dims, batches,
// sequence lengths (1, primes, warp and tile sizes +-1), grouped-query ratios, causal masks, sliding
// windows (small, at the sequence's edges, and up to INT_MAX), variable lengths (empty sequences
// included), padded and interleaved strides, rank-3 views, custom scales and forced candidate policies.
//
// Reproducing: every failure prints the problem, its data seed and its index; the run's seed is printed
// once. PK_PROPERTY_SEED=<seed> replays a run (with --gtest_filter for one backend),
// PK_PROPERTY_CASE=<index> runs only that problem, PK_PROPERTY_COUNT=<n> sets the problems per backend.
#include "attention_case.hpp"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace pk::test {
namespace {

// Problems per backend: sized so that the three emulated targets stay within about a minute on a
// 2-core CI machine (the emulator runs every lane as a fiber).
constexpr int default_count = 100;
// Cap on sum over sequences of seqlen_q * seqlen_k * heads_q * head_dim: keeps one problem at a few
// hundred milliseconds on the emulator; larger draws are shortened.
constexpr std::int64_t work_cap = std::int64_t{1} << 21;

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* e = std::getenv(name);
  return e != nullptr && *e != '\0' ? static_cast<std::uint64_t>(std::strtoull(e, nullptr, 0)) : fallback;
}

// A generator of one backend's problems: the run's seed mixed with the backend's name, so that each
// impersonation gets other problems from the same printed seed.
std::uint64_t backend_seed(std::uint64_t run_seed, const std::string& label) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (const char ch : label) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return run_seed ^ h;
}

template <class T>
T pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}
bool chance(std::mt19937_64& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

// Lengths: 1, primes, warp sizes (32, 64) +-1, query/key tile sizes (64, 128) +-1, or any up to 130.
int random_length(std::mt19937_64& rng, bool allow_empty) {
  static const std::vector<int> edges{1, 2, 3, 5, 7, 11, 13, 17, 31, 32, 33, 63, 64, 65, 97, 127, 128, 129};
  if (allow_empty && chance(rng, 0.1)) return 0;
  return chance(rng, 0.7) ? pick(rng, edges) : std::uniform_int_distribution<int>(1, 130)(rng);
}

// A window bound: none, small, at the sequence's edge (length - 2 .. length + 1), or huge.
int random_window(std::mt19937_64& rng, int length) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  if (u < 0.45) return -1;
  if (u < 0.7) return std::uniform_int_distribution<int>(0, 16)(rng);
  if (u < 0.85) return std::max(-1, length + std::uniform_int_distribution<int>(-2, 1)(rng));
  return pick(rng, std::vector<int>{INT_MAX, INT_MAX - 1, 1 << 30, INT_MAX - 127});
}

attn_case random_case(std::mt19937_64& rng, const stream& s) {
  attn_case c;
  c.type = chance(rng, 0.5) ? dtype::bf16 : dtype::f16;
  c.d = pick(rng, std::vector<int>{32, 32, 64, 64, 64, 96, 128, 128, 192, 256});
  c.heads_kv = std::uniform_int_distribution<int>(1, 2)(rng);
  c.heads_q = c.heads_kv * pick(rng, std::vector<int>{1, 1, 2, 3, 4});
  c.varlen = chance(rng, 0.25);
  c.batch = c.varlen ? std::uniform_int_distribution<int>(1, 4)(rng) : pick(rng, std::vector<int>{1, 1, 1, 2, 2, 3});
  const bool same = chance(rng, 0.3);
  for (int b = 0; b < c.batch; ++b) {
    // Fixed-length batches share one length per side.
    const int q = c.varlen || b == 0 ? random_length(rng, c.varlen) : c.sq[0];
    const int k = same ? q : (c.varlen || b == 0 ? random_length(rng, c.varlen) : c.sk[0]);
    c.sq.push_back(q);
    c.sk.push_back(k);
  }
  // Shorten until the problem fits the emulator's budget.
  auto work = [&] {
    std::int64_t w = 0;
    for (int b = 0; b < c.batch; ++b) w += std::int64_t{c.sq[b]} * c.sk[b] * c.heads_q * c.d;
    return w;
  };
  while (work() > work_cap)
    for (int b = 0; b < c.batch; ++b) c.sq[b] = (c.sq[b] + 1) / 2, c.sk[b] = (c.sk[b] + 1) / 2;
  int max_q = 0, max_k = 0, total_q = 0, total_k = 0;
  for (int b = 0; b < c.batch; ++b) {
    max_q = std::max(max_q, c.sq[b]), max_k = std::max(max_k, c.sk[b]);
    total_q += c.sq[b], total_k += c.sk[b];
  }
  c.causal = chance(rng, 0.3);
  // Edges of one sequence or (varlen) of the packed totals: the API's clamping uses the totals.
  c.window_left = random_window(rng, c.varlen && chance(rng, 0.5) ? total_k : max_k);
  c.window_right = random_window(rng, c.varlen && chance(rng, 0.5) ? total_q : max_q);
  if (chance(rng, 0.3)) c.scale = std::uniform_real_distribution<float>(0.02f, 0.5f)(rng);
  if (chance(rng, 0.25)) c.head_pad = 8;
  if (chance(rng, 0.25)) c.row_pad = pick(rng, std::vector<int>{8, 24});
  c.kv_interleaved = chance(rng, 0.2);
  c.rank3 = (c.varlen || c.batch == 1) && chance(rng, 0.3);
  if (chance(rng, 0.25) && max_q > 0) {  // a forced candidate among those that fit the device
    attention::attention_problem pr;
    pr.type = c.type;
    pr.batch = c.batch;
    pr.heads_q = c.heads_q;
    pr.heads_kv = c.heads_kv;
    pr.head_dim = c.d;
    pr.seqlen_q = max_q;
    pr.seqlen_k = max_k;
    pr.causal = c.causal;
    pr.window_left = c.window_left;
    pr.window_right = c.window_right;
    std::vector<std::string> fit;
    for (const auto& cand : attention::plan(s.device(), pr).choice.all)
      if (cand.fits) fit.push_back(cand.name);
    if (!fit.empty()) c.policy = pick(rng, fit);
  }
  return c;
}

class AttentionProperty : public ::testing::TestWithParam<backend_param> {};

TEST_P(AttentionProperty, RandomProblemsMatchTheReference) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t run_seed = env_u64("PK_PROPERTY_SEED", seed());
  const int count = static_cast<int>(env_u64("PK_PROPERTY_COUNT", default_count));
  const long long only = std::getenv("PK_PROPERTY_CASE") != nullptr ? static_cast<long long>(env_u64("PK_PROPERTY_CASE", 0)) : -1;
  std::cout << "[ property ] PK_PROPERTY_SEED=" << run_seed << ", " << count << " problems on " << GetParam().label
            << std::endl;
  std::mt19937_64 gen(backend_seed(run_seed, GetParam().label));
  for (int i = 0; i < count; ++i) {
    const attn_case c = random_case(gen, s);
    const std::uint64_t data_seed = gen();
    if (only >= 0 && i != only) continue;
    SCOPED_TRACE("property problem " + std::to_string(i) + " (reproduce: PK_PROPERTY_SEED=" + std::to_string(run_seed) +
                 " PK_PROPERTY_CASE=" + std::to_string(i) + " --gtest_filter=*" + GetParam().label + ")");
    run_case(s, c, data_seed);
    if (HasFailure()) return;  // the first failing problem is the report; the rest would repeat it
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionProperty, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
