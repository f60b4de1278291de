// pk::attention_decode and pk::kv_cache_append on every backend: paged caches with shuffled, non-contiguous
// pages (page sizes 1 to 256) and contiguous caches, ragged lengths (0, 1, tile edges, primes), GQA ratios 1
// to 16, seqlen_q 1 and 4 with causal masks and windows, forced split counts, FP8 caches in both e4m3
// variants with per-head scales; checked against the double-precision reference over the dequantized cache
// with FlashAttention's two-reference rule (attention_case.hpp). Cache slots past each sequence hold NaN, and
// table entries past it are out of range: reading either would poison the output. Bad input gives a clear
// status and writes nothing.
#include "attention_case.hpp"

#include <pk/attention/decode.hpp>
#include <pk/portable/numeric.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace pk::test {
namespace {

class AttentionDecode : public ::testing::TestWithParam<backend_param> {};

struct decode_case {
  dtype type = dtype::bf16;
  dtype kv = dtype::bf16;  // the queries' type, f8e4m3fn or f8e4m3fnuz
  int heads_q = 4, heads_kv = 2, d = 64, sq = 1;
  std::vector<int> lens{37, 0, 1};
  int page_size = 16;  // 0: contiguous cache
  int capacity = 0;    // positions per sequence (0: the longest length rounded up to pages, plus one page)
  bool causal = false;
  int window_left = -1, window_right = -1;
  int splits = 0;
  bool scales = true;  // FP8: random per-head scales (else null: 1.0)
  int extra = 0;       // positions past each length whose pages are mapped (room for an append)
  std::string policy;  // a forced decode candidate ("": the plan's)
  bool lse = true;     // request the LSE
  float scale = 0;     // softmax_scale (0: 1/sqrt(d))
  int max_seqlen_k = 0;  // the planner's hint
  std::vector<int> q_pow2;  // query head h times 2^q_pow2[h % size] (exact; empty: none)
  std::string label() const {
    std::string s = std::string(to_string(type)) + " kv " + to_string(kv) + " hq" + std::to_string(heads_q) + " hkv" +
                    std::to_string(heads_kv) + " d" + std::to_string(d) + " sq" + std::to_string(sq) +
                    (page_size ? " page " + std::to_string(page_size) : std::string(" contiguous")) +
                    (causal ? " causal" : "") + " win(" + std::to_string(window_left) + "," + std::to_string(window_right) +
                    ") splits " + std::to_string(splits) + (policy.empty() ? "" : " " + policy) + " lens";
    if (!q_pow2.empty()) {
      s += " q heads x 2^";
      for (int e : q_pow2) s += std::to_string(e) + ",";
    }
    for (int l : lens) s += " " + std::to_string(l);
    return s;
  }
};

bool is_fp8(dtype t) { return t == dtype::f8e4m3fn || t == dtype::f8e4m3fnuz; }
float fp8_value(dtype t, std::uint8_t c) {
  return t == dtype::f8e4m3fnuz ? float(f8e4m3fnuz::from_bits(c)) : float(f8e4m3fn::from_bits(c));
}
std::uint8_t fp8_nan(dtype t) { return t == dtype::f8e4m3fnuz ? 0x80u : 0x7fu; }

// A cache in device memory and the logical (dequantized) values of every sequence: [len][heads_kv][d].
struct cache_data {
  std::vector<std::uint8_t> k, v;  // bytes of the whole cache
  std::vector<std::int32_t> table;
  std::int64_t num_pages = 0, pages_per_seq = 0, capacity = 0;
  std::int64_t stride[4] = {0, 0, 0, 1};  // elements
  std::vector<std::vector<float>> kl, vl;
  std::vector<float> k_scale, v_scale;
};

// Element (page, slot, head, e) of a cache's bytes.
std::size_t at(const cache_data& c, std::int64_t page, std::int64_t slot, int h, int e, int eb) {
  return static_cast<std::size_t>((page * c.stride[0] + slot * c.stride[1] + h * c.stride[2] + e) * eb);
}

cache_data make_cache(const decode_case& c, std::mt19937_64& rng) {
  cache_data cd;
  const int B = static_cast<int>(c.lens.size());
  const int eb = size_of(c.kv);
  const int longest = *std::max_element(c.lens.begin(), c.lens.end());
  const int ps = c.page_size > 0 ? c.page_size : 1;
  cd.capacity = c.capacity > 0 ? c.capacity : (longest + c.extra + ps - 1) / ps * ps + ps;
  if (c.page_size > 0) {
    cd.pages_per_seq = cd.capacity / c.page_size;
    cd.num_pages = cd.pages_per_seq * B + 3;  // spare pages nobody uses
    std::vector<std::int32_t> perm(static_cast<std::size_t>(cd.num_pages));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    cd.table.assign(static_cast<std::size_t>(B * cd.pages_per_seq), 0);
    std::size_t next = 0;
    for (int b = 0; b < B; ++b)
      for (std::int64_t pg = 0; pg < cd.pages_per_seq; ++pg) {
        const bool used = pg * c.page_size < c.lens[static_cast<std::size_t>(b)] + c.extra;
        // Entries past the sequence point outside the cache: reading one would poison the row.
        cd.table[static_cast<std::size_t>(b * cd.pages_per_seq + pg)] = used ? perm[next++] : std::int32_t{1} << 30;
      }
  } else {
    cd.num_pages = B;
  }
  const std::int64_t rows = c.page_size > 0 ? c.page_size : cd.capacity;
  const int head_pad = 16 / eb;  // one 16-byte vector between heads: strides other than the dense ones
  cd.stride[2] = c.d + head_pad;
  cd.stride[1] = cd.stride[2] * c.heads_kv;
  cd.stride[0] = cd.stride[1] * rows;
  const std::size_t bytes = static_cast<std::size_t>(cd.num_pages * cd.stride[0] * eb);
  if (is_fp8(c.kv)) {
    cd.k.assign(bytes, fp8_nan(c.kv));
    cd.v.assign(bytes, fp8_nan(c.kv));
  } else {
    cd.k.resize(bytes);
    cd.v.resize(bytes);
    for (std::size_t i = 0; i + 1 < bytes; i += 2) cd.k[i] = cd.v[i] = nan_bits(c.kv) & 0xff, cd.k[i + 1] = cd.v[i + 1] = nan_bits(c.kv) >> 8;
  }
  std::uniform_real_distribution<float> us(0.005f, 0.05f);
  cd.k_scale.assign(static_cast<std::size_t>(c.heads_kv), 1.0f);
  cd.v_scale.assign(static_cast<std::size_t>(c.heads_kv), 1.0f);
  if (is_fp8(c.kv) && c.scales)
    for (int h = 0; h < c.heads_kv; ++h) cd.k_scale[static_cast<std::size_t>(h)] = us(rng), cd.v_scale[static_cast<std::size_t>(h)] = us(rng);
  // FP8 codes drawn uniformly from every non-NaN code (subnormals, zeros and the largest values included).
  std::uniform_int_distribution<int> code(0, 255);
  const auto draw = [&](dtype t) {
    for (;;) {
      const auto b = static_cast<std::uint8_t>(code(rng));
      if (!std::isnan(fp8_value(t, b))) return b;
    }
  };
  std::normal_distribution<float> nd(0.0f, 1.0f);
  cd.kl.resize(static_cast<std::size_t>(B));
  cd.vl.resize(static_cast<std::size_t>(B));
  for (int b = 0; b < B; ++b) {
    const int len = c.lens[static_cast<std::size_t>(b)];
    cd.kl[static_cast<std::size_t>(b)].resize(static_cast<std::size_t>(len) * c.heads_kv * c.d);
    cd.vl[static_cast<std::size_t>(b)].resize(static_cast<std::size_t>(len) * c.heads_kv * c.d);
    for (int t = 0; t < len; ++t) {
      std::int64_t page = b, slot = t;
      if (c.page_size > 0) {
        page = cd.table[static_cast<std::size_t>(b * cd.pages_per_seq + t / c.page_size)];
        slot = t % c.page_size;
      }
      for (int h = 0; h < c.heads_kv; ++h)
        for (int e = 0; e < c.d; ++e) {
          const std::size_t li = (static_cast<std::size_t>(t) * c.heads_kv + h) * c.d + e;
          const std::size_t o = at(cd, page, slot, h, e, eb);
          for (int kv = 0; kv < 2; ++kv) {
            auto& bytes_ = kv == 0 ? cd.k : cd.v;
            auto& logical = kv == 0 ? cd.kl[static_cast<std::size_t>(b)] : cd.vl[static_cast<std::size_t>(b)];
            if (is_fp8(c.kv)) {
              const std::uint8_t cb = draw(c.kv);
              bytes_[o] = cb;
              const float sc = (kv == 0 ? cd.k_scale : cd.v_scale)[static_cast<std::size_t>(h)];
              logical[li] = static_cast<float>(static_cast<double>(fp8_value(c.kv, cb)) * sc);
            } else {
              const float x = round_to(c.kv, nd(rng));
              const std::uint16_t bits = to_bits(c.kv, x);
              bytes_[o] = static_cast<std::uint8_t>(bits & 0xff);
              bytes_[o + 1] = static_cast<std::uint8_t>(bits >> 8);
              logical[li] = x;
            }
          }
        }
    }
  }
  return cd;
}

struct device_cache {
  device_buffer<std::uint8_t> k, v;
  device_buffer<std::int32_t> table, lens;
  device_buffer<float> k_scale, v_scale;
};

bool upload(const stream& s, const decode_case& c, const cache_data& cd, device_cache& dc, kv_cache& kc) {
  const int B = static_cast<int>(c.lens.size());
  if (!dc.k.allocate(s, cd.k.size()) || !dc.k.upload(cd.k) || !dc.v.allocate(s, cd.v.size()) || !dc.v.upload(cd.v)) return false;
  if (!dc.lens.allocate(s, static_cast<std::size_t>(B)) || !dc.lens.upload(std::vector<std::int32_t>(c.lens.begin(), c.lens.end())))
    return false;
  const std::int64_t rows = c.page_size > 0 ? c.page_size : cd.capacity;
  kc.k.data = dc.k.data();
  kc.k.type = c.kv;
  kc.k.rank = 4;
  kc.k.shape[0] = cd.num_pages;
  kc.k.shape[1] = rows;
  kc.k.shape[2] = c.heads_kv;
  kc.k.shape[3] = c.d;
  for (int i = 0; i < 4; ++i) kc.k.stride[i] = cd.stride[i];
  kc.v = kc.k;
  kc.v.data = dc.v.data();
  if (c.page_size > 0) {
    if (!dc.table.allocate(s, cd.table.size()) || !dc.table.upload(cd.table)) return false;
    kc.block_table = contiguous(dc.table.data(), dtype::i32, {std::int64_t{B}, cd.pages_per_seq});
  }
  kc.seqlens = dc.lens.data();
  if (is_fp8(c.kv) && c.scales) {
    if (!dc.k_scale.allocate(s, cd.k_scale.size()) || !dc.k_scale.upload(cd.k_scale) || !dc.v_scale.allocate(s, cd.v_scale.size()) ||
        !dc.v_scale.upload(cd.v_scale))
      return false;
    kc.k_scale = dc.k_scale.data();
    kc.v_scale = dc.v_scale.data();
  }
  return true;
}

// The split count attention_decode runs for a case (a forced count is cut to the key tiles of the context: the
// hint, else the capacity).
int planned_splits(const stream& s, const decode_case& c, std::int64_t capacity) {
  attention::decode_problem pr;
  pr.type = c.type;
  pr.kv_type = c.kv;
  pr.batch = static_cast<int>(c.lens.size());
  pr.heads_q = c.heads_q;
  pr.heads_kv = c.heads_kv;
  pr.head_dim = c.d;
  pr.seqlen_q = c.sq;
  pr.context = c.max_seqlen_k > 0 ? c.max_seqlen_k : capacity;
  pr.page_size = c.page_size;
  pr.causal = c.causal;
  pr.window_left = c.window_left;
  pr.window_right = c.window_right;
  pr.num_splits = c.splits;
  return attention::plan_decode(s.device(), pr).splits;
}

// Runs one case; out/lse (host copies) are returned for comparisons between runs.
void run_decode(const stream& s, const decode_case& c, std::uint64_t sd, std::vector<std::uint16_t>* out_copy = nullptr) {
  SCOPED_TRACE(c.label() + " (data seed " + std::to_string(sd) + ")");
  std::mt19937_64 rng(sd);
  const int B = static_cast<int>(c.lens.size());
  cache_data cd = make_cache(c, rng);
  std::vector<std::vector<float>> q(static_cast<std::size_t>(B));
  std::vector<std::uint16_t> qh(static_cast<std::size_t>(B) * c.sq * c.heads_q * c.d);
  for (int b = 0; b < B; ++b) {
    q[static_cast<std::size_t>(b)] = random_seq(rng, c.type, static_cast<std::size_t>(c.sq) * c.heads_q * c.d);
    if (!c.q_pow2.empty())
      for (std::size_t i = 0; i < q[static_cast<std::size_t>(b)].size(); ++i)
        q[static_cast<std::size_t>(b)][i] =
            std::ldexp(q[static_cast<std::size_t>(b)][i], c.q_pow2[(i / static_cast<std::size_t>(c.d)) % static_cast<std::size_t>(c.heads_q) % c.q_pow2.size()]);
    for (std::size_t i = 0; i < q[static_cast<std::size_t>(b)].size(); ++i)
      qh[static_cast<std::size_t>(b) * c.sq * c.heads_q * c.d + i] = to_bits(c.type, q[static_cast<std::size_t>(b)][i]);
  }
  device_cache dc;
  kv_cache kc;
  ASSERT_TRUE(upload(s, c, cd, dc, kc));
  device_buffer<std::uint16_t> dq, dout;
  device_buffer<float> dlse;
  ASSERT_TRUE(dq.allocate(s, qh.size()) && dq.upload(qh));
  ASSERT_TRUE(dout.allocate(s, qh.size()) && dout.upload(std::vector<std::uint16_t>(qh.size(), nan_bits(c.type))));
  const std::size_t nl = static_cast<std::size_t>(B) * c.heads_q * c.sq;
  ASSERT_TRUE(dlse.allocate(s, nl) && dlse.upload(std::vector<float>(nl, std::nanf(""))));
  decode_args a;
  a.q = contiguous(dq.data(), c.type, {std::int64_t{B}, std::int64_t{c.sq}, std::int64_t{c.heads_q}, std::int64_t{c.d}});
  a.out = a.q;
  a.out.data = dout.data();
  a.cache = kc;
  a.lse = c.lse ? dlse.data() : nullptr;
  a.softmax_scale = c.scale;
  a.max_seqlen_k = c.max_seqlen_k;
  a.causal = c.causal;
  a.window_left = c.window_left;
  a.window_right = c.window_right;
  a.num_splits = c.splits;
  a.policy = c.policy.empty() ? nullptr : c.policy.c_str();
  status st = attention_decode(s, a);
  if (st) st = synchronize(s);
  ASSERT_TRUE(st) << st.to_string();
  std::vector<std::uint16_t> out;
  std::vector<float> lse;
  ASSERT_TRUE(dout.download(out) && dlse.download(lse));
  if (out_copy) *out_copy = out;

  const double scale = c.scale > 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.d));
  const auto rnd = [&](float x) { return round_to(c.type, x); };
  double err = 0, err_naive = 0, noise = 0, lerr = 0, lerr_naive = 0, lnoise = 0;
  for (int b = 0; b < B; ++b) {
    const int len = c.lens[static_cast<std::size_t>(b)];
    attention::reference::mask m{c.sq, len, c.causal, c.window_left, c.window_right};
    std::vector<double> ref, ref_lse, nv, nv_lse;
    attention::reference::forward(q[static_cast<std::size_t>(b)].data(), cd.kl[static_cast<std::size_t>(b)].data(),
                                  cd.vl[static_cast<std::size_t>(b)].data(), c.heads_q, c.heads_kv, c.d, m, scale, false, rnd, ref, ref_lse);
    attention::reference::forward(q[static_cast<std::size_t>(b)].data(), cd.kl[static_cast<std::size_t>(b)].data(),
                                  cd.vl[static_cast<std::size_t>(b)].data(), c.heads_q, c.heads_kv, c.d, m, scale, true, rnd, nv, nv_lse);
    for (int i = 0; i < c.sq; ++i)
      for (int h = 0; h < c.heads_q; ++h) {
        const std::size_t li = (static_cast<std::size_t>(b) * c.heads_q + h) * c.sq + i;
        const double rl = ref_lse[static_cast<std::size_t>(h) * c.sq + i];
        const bool dead = std::isinf(rl);
        if (!c.lse) {
          ASSERT_TRUE(std::isnan(lse[li])) << "the LSE was not requested but written";
        } else if (dead) {
          ASSERT_TRUE(std::isinf(lse[li]) && lse[li] < 0) << "batch " << b << " row " << i << " head " << h << ": lse " << lse[li];
        } else {
          ASSERT_TRUE(std::isfinite(lse[li])) << "batch " << b << " row " << i << " head " << h << ": lse " << lse[li];
          lerr = std::max(lerr, std::abs(lse[li] - rl));
          lerr_naive = std::max(lerr_naive, std::abs(nv_lse[static_cast<std::size_t>(h) * c.sq + i] - rl));
          const float rf = static_cast<float>(rl);
          lnoise = std::max({lnoise, std::abs(static_cast<double>((rf + 0.3f) - 0.3f) - rf),
                             4 * numeric_traits<float>::epsilon() * std::max(1.0, std::abs(rl))});
        }
        for (int e = 0; e < c.d; ++e) {
          const std::size_t oi = ((static_cast<std::size_t>(b) * c.sq + i) * c.heads_q + h) * c.d + e;
          const double got = from_bits(c.type, out[oi]);
          const std::size_t ri = (static_cast<std::size_t>(i) * c.heads_q + h) * c.d + e;
          ASSERT_TRUE(std::isfinite(got)) << "batch " << b << " row " << i << " head " << h << " col " << e << ": " << got;
          if (dead) {
            ASSERT_EQ(got, 0.0) << "fully masked: batch " << b << " row " << i << " head " << h;
            continue;
          }
          err = std::max(err, std::abs(got - ref[ri]));
          err_naive = std::max(err_naive, std::abs(nv[ri] - ref[ri]));
          const float r16 = rnd(static_cast<float>(ref[ri]));
          noise = std::max(noise, std::abs(static_cast<double>(rnd(rnd(r16 + 0.3f) - 0.3f)) - r16));
        }
      }
  }
  EXPECT_LE(err, 2 * err_naive + 2 * noise) << "out: max err " << err << ", naive " << err_naive << ", noise " << noise;
  EXPECT_LE(lerr, 2 * lerr_naive + 2 * lnoise) << "lse: max err " << lerr << ", naive " << lerr_naive << ", noise " << lnoise;
}

TEST_P(AttentionDecode, PagedEveryPageSizeAndRaggedLengths) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int ps : {1, 16, 64, 256}) {
    decode_case c;
    c.page_size = ps;
    c.lens = {ps == 256 ? 257 : 131, 0, 1, 64, 65};
    run_decode(s, c, sd + static_cast<std::uint64_t>(ps));
    if (HasFatalFailure()) return;
  }
}

TEST_P(AttentionDecode, GroupRatiosHeadDimsAndTypes) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  struct shape {
    int hq, hkv, d;
    dtype t;
  };
  for (const shape& sh : {shape{2, 2, 128, dtype::bf16}, shape{8, 2, 64, dtype::f16}, shape{8, 1, 256, dtype::bf16},
                          shape{16, 1, 128, dtype::f16}}) {
    decode_case c;
    c.type = c.kv = sh.t;
    c.heads_q = sh.hq;
    c.heads_kv = sh.hkv;
    c.d = sh.d;
    c.lens = {97, 3};
    run_decode(s, c, sd + static_cast<std::uint64_t>(sh.hq * 1000 + sh.d));
    if (HasFatalFailure()) return;
  }
}

TEST_P(AttentionDecode, SeveralQueriesCausalAndWindows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  struct masks {
    bool causal;
    int l, r;
  };
  for (const masks& m : {masks{true, -1, -1}, masks{false, 20, -1}, masks{true, 7, -1}, masks{false, 5, 2}, masks{false, -1, -1}}) {
    decode_case c;
    c.sq = 4;
    c.heads_q = 8;
    c.heads_kv = 2;  // 16 packed rows
    c.causal = m.causal;
    c.window_left = m.l;
    c.window_right = m.r;
    c.lens = {70, 2, 4, 0};
    run_decode(s, c, sd + static_cast<std::uint64_t>(m.l * 7 + m.r));
    if (HasFatalFailure()) return;
  }
  // 4 queries x 6 heads per KV head: 24 packed rows, so a query's heads straddle two blocks of rows.
  {
    decode_case c;
    c.sq = 4;
    c.heads_q = 12;
    c.heads_kv = 2;
    c.causal = true;
    c.lens = {33, 3};
    run_decode(s, c, sd + 98);
    if (HasFatalFailure()) return;
  }
  // 4 queries x 16 heads per KV head: 64 packed rows.
  decode_case c;
  c.sq = 4;
  c.heads_q = 16;
  c.heads_kv = 1;
  c.causal = true;
  c.lens = {45, 5};
  run_decode(s, c, sd + 99);
}

TEST_P(AttentionDecode, ForcedSplitCounts) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int splits : {1, 2, 3, 7, 16}) {
    decode_case c;
    c.d = 128;
    c.heads_q = 4;
    c.heads_kv = 1;
    c.page_size = 64;
    c.lens = {611, 1, 0, 130};
    c.splits = splits;
    run_decode(s, c, sd + static_cast<std::uint64_t>(splits));
    if (HasFatalFailure()) return;
  }
}

// The combine's grouped paths (17 splits: 4 groups of threads per row at head_dim 64 and 128, 2 at 256; 128 and
// 512: 16 groups, 8 at 256; fewer than 16 splits take one group, as in ForcedSplitCounts) at counts the planner
// does not cut (a capacity of a 64-key tile per split): counts that are not a multiple of the groups, splits
// without keys (611 keys fill 10 of them), empty sequences, and an odd number of rows (3 query heads x 3
// sequences), so that a block of two rows (head_dim 64) has a row past the end. At the largest count 5003 keys fill 79 splits, several per group, so that a group's
// one-pass walk meets new maxima after earlier splits.
TEST_P(AttentionDecode, CombineGroupsOfSplits) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (const int d : {64, 128, 256})
    for (const int splits : {17, 128, max_decode_splits}) {
      decode_case c;
      c.d = d;
      c.heads_q = 3;
      c.heads_kv = 1;
      c.page_size = 16;
      c.lens = {splits == max_decode_splits ? 5003 : 611, 1, 0};
      c.capacity = splits * 64;
      c.splits = splits;
      ASSERT_EQ(planned_splits(s, c, c.capacity), splits) << "the forced count must stand, d " << d;
      run_decode(s, c, sd + static_cast<std::uint64_t>(d + splits));
      if (HasFatalFailure()) return;
    }
}

// Every candidate of the stream's code target that fits its device, 16-bit and FP8, split and not.
TEST_P(AttentionDecode, EveryFittingCandidate) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (const int d : {64, 128, 256})
    for (const dtype kv : {dtype::bf16, dtype::f8e4m3fn}) {
      attention::decode_problem pr;
      pr.kv_type = kv;
      pr.heads_q = 8;
      pr.heads_kv = 2;
      pr.head_dim = d;
      pr.context = 300;
      const archdb::plan pl = attention::plan_decode(s.device(), pr).choice;
      int ran = 0;
      for (const auto& cand : pl.all) {
        if (!cand.fits) continue;
        for (const int splits : {1, 3}) {
          decode_case c;
          c.kv = kv;
          c.d = d;
          c.heads_q = 8;
          c.heads_kv = 2;
          c.lens = {300, 129, 0};
          c.splits = splits;
          c.policy = cand.name;
          run_decode(s, c, sd + static_cast<std::uint64_t>(d * 10 + splits));
          if (HasFatalFailure()) return;
        }
        ++ran;
      }
      EXPECT_GT(ran, 0) << "no decode candidate fits " << s.device().name << " at head_dim " << d;
    }
}

// Options: no LSE, a softmax scale of the caller's, and a planner hint shorter than the real lengths (the plan
// may differ; the result may not).
TEST_P(AttentionDecode, LseScaleAndLengthHint) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  decode_case c;
  c.lens = {200, 7, 0};
  c.lse = false;
  run_decode(s, c, sd);
  if (HasFatalFailure()) return;
  c.lse = true;
  c.scale = 0.37f;
  run_decode(s, c, sd + 1);
  if (HasFatalFailure()) return;
  c.scale = 0;
  c.max_seqlen_k = 10;
  run_decode(s, c, sd + 2);
}

TEST_P(AttentionDecode, ContiguousCache) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  decode_case c;
  c.page_size = 0;
  c.lens = {150, 0, 33};
  c.capacity = 200;
  run_decode(s, c, sd);
  c.splits = 3;
  run_decode(s, c, sd + 1);
}

TEST_P(AttentionDecode, Fp8CachesBothVariants) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (dtype kv : {dtype::f8e4m3fn, dtype::f8e4m3fnuz})
    for (dtype t : {dtype::bf16, dtype::f16}) {
      decode_case c;
      c.type = t;
      c.kv = kv;
      c.d = 128;
      c.heads_q = 8;
      c.heads_kv = 2;
      c.lens = {150, 1, 0};
      run_decode(s, c, sd + static_cast<std::uint64_t>(kv) * 10 + static_cast<std::uint64_t>(t));
      if (HasFatalFailure()) return;
    }
  decode_case c;
  c.kv = dtype::f8e4m3fn;
  c.scales = false;
  c.lens = {40};
  c.splits = 2;
  run_decode(s, c, sd + 5);
  if (HasFatalFailure()) return;
  // FP8 blocks run their products on fp16: bf16 query heads of very different magnitudes packed into one block
  // (GQA 4: heads 0-3 share a KV head) must each keep their precision, and none may overflow fp16.
  for (dtype kv : {dtype::bf16, dtype::f8e4m3fn, dtype::f8e4m3fnuz}) {
    decode_case m;
    m.kv = kv;
    m.d = 128;
    m.heads_q = 8;
    m.heads_kv = 2;
    m.lens = {77, 3};
    m.q_pow2 = {60, 0, -60, 17};
    run_decode(s, m, sd + 6 + static_cast<std::uint64_t>(kv));
    if (HasFatalFailure()) return;
  }
}

// Appends new tokens into a cache (16-bit and FP8): the cache then holds exactly the bytes the CPU writes
// (FP8: x * (1 / scale) rounded to nearest even, saturating; the rounding itself is checked against an
// independent reference in tests/portable/test_numeric.cpp), a slot past the table is an error and writes
// nothing, and decode over the appended cache equals decode over the CPU's bytes.
TEST_P(AttentionDecode, AppendThenDecode) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  struct variant {
    dtype kv, type;
    int page_size;
  };
  for (const variant var : {variant{dtype::bf16, dtype::bf16, 16}, variant{dtype::f8e4m3fn, dtype::bf16, 16},
                            variant{dtype::f8e4m3fnuz, dtype::f16, 16}, variant{dtype::f16, dtype::f16, 0},
                            variant{dtype::f8e4m3fn, dtype::f16, 0}}) {
    const dtype kv = var.kv;
    std::mt19937_64 rng(sd + static_cast<std::uint64_t>(kv) * 7 + static_cast<std::uint64_t>(var.page_size));
    decode_case c;
    c.kv = kv;
    c.type = var.type;
    c.page_size = var.page_size;
    c.lens = {20, 0, 63};
    c.extra = 3;
    cache_data cd = make_cache(c, rng);
    const int B = 3, nt = 3, eb = size_of(kv);
    // The new tokens: 16-bit values (large ones too, to reach FP8 saturation).
    std::vector<std::uint16_t> kn(static_cast<std::size_t>(B) * nt * c.heads_kv * c.d), vn(kn.size());
    std::normal_distribution<float> nd(0.0f, 4.0f);
    for (auto& x : kn) x = to_bits(c.type, nd(rng));
    for (auto& x : vn) x = to_bits(c.type, nd(rng) * 100.0f);
    // Expected cache bytes after the append.
    cache_data expect = cd;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < nt; ++t) {
        const std::int64_t pos = c.lens[static_cast<std::size_t>(b)] + t;
        const std::int64_t page =
            c.page_size > 0 ? cd.table[static_cast<std::size_t>(b * cd.pages_per_seq + pos / c.page_size)] : b;
        const std::int64_t slot = c.page_size > 0 ? pos % c.page_size : pos;
        for (int h = 0; h < c.heads_kv; ++h)
          for (int e = 0; e < c.d; ++e)
            for (int kvi = 0; kvi < 2; ++kvi) {
              const std::uint16_t x = (kvi == 0 ? kn : vn)[((static_cast<std::size_t>(b) * nt + t) * c.heads_kv + h) * c.d + e];
              auto& bytes_ = kvi == 0 ? expect.k : expect.v;
              const std::size_t o = at(cd, page, slot, h, e, eb);
              if (is_fp8(kv)) {
                const float inv = 1.0f / (kvi == 0 ? cd.k_scale : cd.v_scale)[static_cast<std::size_t>(h)];
                const float xf = from_bits(c.type, x) * inv;
                bytes_[o] = kv == dtype::f8e4m3fnuz ? f8e4m3fnuz(xf).bits : f8e4m3fn(xf).bits;
              } else {
                bytes_[o] = static_cast<std::uint8_t>(x & 0xff);
                bytes_[o + 1] = static_cast<std::uint8_t>(x >> 8);
              }
            }
      }
    device_cache dc;
    kv_cache kc;
    ASSERT_TRUE(upload(s, c, cd, dc, kc));
    device_buffer<std::uint16_t> dkn, dvn;
    ASSERT_TRUE(dkn.allocate(s, kn.size()) && dkn.upload(kn) && dvn.allocate(s, vn.size()) && dvn.upload(vn));
    kv_append_args ap;
    ap.cache = kc;
    ap.k_new = contiguous(dkn.data(), c.type, {std::int64_t{B}, std::int64_t{nt}, std::int64_t{c.heads_kv}, std::int64_t{c.d}});
    ap.v_new = ap.k_new;
    ap.v_new.data = dvn.data();
    status st = kv_cache_append(s, ap);
    if (st) st = synchronize(s);
    ASSERT_TRUE(st) << st.to_string();
    std::vector<std::uint8_t> gk, gv;
    ASSERT_TRUE(dc.k.download(gk) && dc.v.download(gv));
    for (std::size_t i = 0; i < gk.size(); ++i) {
      ASSERT_EQ(gk[i], expect.k[i]) << to_string(kv) << ": K byte " << i;
      ASSERT_EQ(gv[i], expect.v[i]) << to_string(kv) << ": V byte " << i;
    }
    // A slot past the table: an error, and nothing written.
    std::vector<std::int32_t> big{static_cast<std::int32_t>(cd.capacity - 1), 0, 0};
    device_buffer<std::int32_t> dbig;
    ASSERT_TRUE(dbig.allocate(s, big.size()) && dbig.upload(big));
    kv_append_args bad = ap;
    bad.cache.seqlens = dbig.data();
    if (s.backend() == backend_kind::host) {
      const status e = kv_cache_append(s, bad);
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.to_string();
      EXPECT_NE(e.message().find("cache.seqlens[0]"), std::string::npos) << e.message();
    } else {
      device_buffer<std::int32_t> derr;
      ASSERT_TRUE(derr.allocate(s, 1) && derr.upload(std::vector<std::int32_t>{0}));
      bad.error = derr.data();
      ASSERT_TRUE(kv_cache_append(s, bad));
      ASSERT_TRUE(synchronize(s));
      std::vector<std::int32_t> e;
      ASSERT_TRUE(derr.download(e));
      EXPECT_EQ(e[0], 1) << "the device flags a slot past the table";
    }
    std::vector<std::uint8_t> gk2;
    ASSERT_TRUE(dc.k.download(gk2));
    EXPECT_EQ(gk2, gk) << "a rejected append must not write";

    // Decode with the new tokens counted, over the appended cache and over the CPU's bytes uploaded afresh: the
    // same output, bit for bit.
    std::vector<std::int32_t> grown(c.lens.begin(), c.lens.end());
    for (auto& l : grown) l += nt;
    device_buffer<std::int32_t> dgrown;
    ASSERT_TRUE(dgrown.allocate(s, grown.size()) && dgrown.upload(grown));
    device_cache cpu;
    kv_cache kcpu;
    ASSERT_TRUE(upload(s, c, expect, cpu, kcpu));
    const std::size_t nq = static_cast<std::size_t>(B) * c.heads_q * c.d;
    std::vector<std::uint16_t> qh(nq);
    for (auto& x : qh) x = to_bits(c.type, nd(rng) * 0.25f);
    device_buffer<std::uint16_t> dq, o1, o2;
    ASSERT_TRUE(dq.allocate(s, nq) && dq.upload(qh) && o1.allocate(s, nq) && o2.allocate(s, nq));
    decode_args da;
    da.q = contiguous(dq.data(), c.type, {std::int64_t{B}, 1, std::int64_t{c.heads_q}, std::int64_t{c.d}});
    da.out = da.q;
    da.out.data = o1.data();
    da.cache = kc;
    da.cache.seqlens = dgrown.data();
    ASSERT_TRUE(attention_decode(s, da));
    da.out.data = o2.data();
    da.cache = kcpu;
    da.cache.seqlens = dgrown.data();
    ASSERT_TRUE(attention_decode(s, da));
    ASSERT_TRUE(synchronize(s));
    std::vector<std::uint16_t> h1, h2;
    ASSERT_TRUE(o1.download(h1) && o2.download(h2));
    EXPECT_EQ(h1, h2) << to_string(kv) << ": decode after the append differs from decode over the CPU-filled cache";
    for (std::uint16_t x : h1) ASSERT_TRUE(std::isfinite(from_bits(c.type, x)));
  }
}

TEST_P(AttentionDecode, BadArgumentsNameTheRule) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  std::mt19937_64 rng(sd);
  decode_case c;
  c.lens = {10, 20};
  c.capacity = 64 * 64;  // room for 64 splits of a 64-key tile (the bad-page case forces them)
  cache_data cd = make_cache(c, rng);
  device_cache dc;
  kv_cache kc;
  ASSERT_TRUE(upload(s, c, cd, dc, kc));
  const std::size_t n = static_cast<std::size_t>(2) * c.sq * c.heads_q * c.d;
  device_buffer<std::uint16_t> dq, dout;
  ASSERT_TRUE(dq.allocate(s, n + 8) && dq.upload(std::vector<std::uint16_t>(n + 8, to_bits(c.type, 0.5f))));
  ASSERT_TRUE(dout.allocate(s, n) && dout.upload(std::vector<std::uint16_t>(n, nan_bits(c.type))));
  decode_args good;
  good.q = contiguous(dq.data(), c.type, {2, std::int64_t{c.sq}, std::int64_t{c.heads_q}, std::int64_t{c.d}});
  good.out = good.q;
  good.out.data = dout.data();
  good.cache = kc;
  const auto expect = [&](decode_args a, errc code, const std::string& needle) {
    const status st = attention_decode(s, a);
    EXPECT_EQ(st.code(), code) << needle << ": " << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  {
    decode_args a = good;
    a.q.data = nullptr;
    expect(a, errc::invalid_argument, "q: data must not be null");
  }
  {
    decode_args a = good;
    a.q.data = dq.data() + 1;
    expect(a, errc::invalid_argument, "q: data must be 16-byte aligned");
  }
  {
    decode_args a = good;
    a.q.type = a.out.type = dtype::f32;
    expect(a, errc::unsupported, "q: dtype f32");
  }
  {
    decode_args a = good;
    a.q.shape[1] = a.out.shape[1] = 17;
    expect(a, errc::unsupported, "seqlen_q 17");
  }
  {
    decode_args a = good;
    a.q.shape[3] = a.out.shape[3] = 96;
    expect(a, errc::unsupported, "head_dim 96");
  }
  {
    decode_args a = good;
    a.q.shape[2] = a.out.shape[2] = 3;
    expect(a, errc::invalid_argument, "must divide heads_q");
  }
  {
    decode_args a = good;
    a.cache.k.shape[1] = a.cache.v.shape[1] = 12;
    expect(a, errc::unsupported, "page_size 12");
  }
  {
    decode_args a = good;
    a.cache.k.shape[1] = a.cache.v.shape[1] = 512;
    expect(a, errc::unsupported, "page_size 512");
  }
  {
    decode_args a = good;
    a.cache.k.type = a.cache.v.type = dtype::i8;
    expect(a, errc::unsupported, "cache.k: dtype i8");
  }
  {
    decode_args a = good;
    a.cache.k_scale = reinterpret_cast<const float*>(dq.data());
    expect(a, errc::invalid_argument, "only FP8 caches take scales");
  }
  {
    decode_args a = good;
    a.cache.block_table.type = dtype::i64;
    expect(a, errc::invalid_argument, "cache.block_table: dtype i64");
  }
  {
    decode_args a = good;
    a.cache.seqlens = nullptr;
    expect(a, errc::invalid_argument, "cache.seqlens: must not be null");
  }
  {
    decode_args a = good;
    a.num_splits = max_decode_splits + 1;
    expect(a, errc::invalid_argument, "num_splits");
  }
  {
    decode_args a = good;
    a.cache.k.stride[2] = 12;
    expect(a, errc::invalid_argument, "cache.k: stride[2] = 12");
  }
  {
    decode_args a = good;
    a.out = a.q;
    expect(a, errc::invalid_argument, "out: its memory overlaps q's");
  }
  {
    decode_args a = good;
    a.lse = reinterpret_cast<float*>(dout.data());
    expect(a, errc::invalid_argument, "out: its memory overlaps lse's");
  }
  {
    decode_args a = good;
    a.out.data = a.cache.v.data;
    expect(a, errc::invalid_argument, "out: its memory overlaps cache.v's");
  }
  {
    decode_args a = good;
    a.error = const_cast<std::int32_t*>(a.cache.seqlens);
    expect(a, errc::invalid_argument, "error: its memory overlaps cache.seqlens's");
  }
  {
    // kv_cache_append writes the cache: new tokens read from inside it are refused.
    kv_append_args ap;
    ap.cache = kc;
    ap.k_new = ap.v_new = contiguous(const_cast<void*>(kc.k.data), c.type, {2, 1, std::int64_t{c.heads_kv}, std::int64_t{c.d}});
    const status st = kv_cache_append(s, ap);
    EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
    EXPECT_NE(st.message().find("cache.k: its memory overlaps k_new's"), std::string::npos) << st.message();
  }
  {
    // K and V interleaved page by page in one buffer ([pages, 2, page_size, heads_kv, d]): their address
    // ranges meet but no element is shared, so appending to them is valid; V at K's own address is not.
    const std::size_t page_elems = static_cast<std::size_t>(cd.stride[0]);
    device_buffer<std::uint16_t> both, kn;
    ASSERT_TRUE(both.allocate(s, 2 * page_elems * static_cast<std::size_t>(cd.num_pages)));
    ASSERT_TRUE(both.upload(std::vector<std::uint16_t>(2 * page_elems * static_cast<std::size_t>(cd.num_pages), to_bits(c.type, 0.0f))));
    const std::size_t kn_elems = static_cast<std::size_t>(2 * c.heads_kv * c.d);
    ASSERT_TRUE(kn.allocate(s, kn_elems) && kn.upload(std::vector<std::uint16_t>(kn_elems, to_bits(c.type, 0.5f))));
    kv_append_args ap;
    ap.cache = kc;
    ap.cache.k.data = both.data();
    ap.cache.k.stride[0] = 2 * cd.stride[0];
    ap.cache.v = ap.cache.k;
    ap.cache.v.data = both.data() + page_elems;
    ap.k_new = ap.v_new = contiguous(kn.data(), c.type, {2, 1, std::int64_t{c.heads_kv}, std::int64_t{c.d}});
    const status ok = kv_cache_append(s, ap);
    EXPECT_TRUE(ok) << ok.to_string();
    ap.cache.v.data = ap.cache.k.data;
    const status st = kv_cache_append(s, ap);
    EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
    EXPECT_NE(st.message().find("cache.k: its memory overlaps cache.v's"), std::string::npos) << st.message();
  }
  if (s.backend() == backend_kind::host) {
    // The emulator reads the lengths and the table: a page outside the cache and a length past the capacity.
    std::vector<std::int32_t> table = cd.table;
    table[0] = static_cast<std::int32_t>(cd.num_pages);
    device_buffer<std::int32_t> dt;
    ASSERT_TRUE(dt.allocate(s, table.size()) && dt.upload(table));
    decode_args a = good;
    a.cache.block_table.data = dt.data();
    expect(a, errc::invalid_argument, "cache.block_table[0][0]");
    std::vector<std::int32_t> lens{10, static_cast<std::int32_t>(cd.capacity + 1)};
    device_buffer<std::int32_t> dl;
    ASSERT_TRUE(dl.allocate(s, 2) && dl.upload(lens));
    a = good;
    a.cache.seqlens = dl.data();
    expect(a, errc::invalid_argument, "cache.seqlens[1]");
  } else {
    // The GPU does not read the table on the host: a bad page poisons its sequence's rows, output and LSE, also
    // through each of the split combine's paths (1, 4 and 16 groups of threads per row), and sets the error flag;
    // the other sequence's rows stay finite. The outputs are filled first with a finite value that no output or LSE
    // of these inputs comes near (outputs are convex combinations of N(0, 1) values, the LSEs a few units), so that
    // NaN is what the kernels wrote.
    std::vector<std::int32_t> table = cd.table;
    table[0] = -5;
    device_buffer<std::int32_t> dt, derr;
    device_buffer<float> dlse;
    const std::size_t nl = static_cast<std::size_t>(2) * c.heads_q * c.sq;
    ASSERT_TRUE(dt.allocate(s, table.size()) && dt.upload(table));
    ASSERT_TRUE(derr.allocate(s, 1) && dlse.allocate(s, nl));
    constexpr float fill_value = 1000.0f;
    const std::uint16_t fill = to_bits(c.type, fill_value);
    for (const int splits : {0, 3, 20, 64}) {
      SCOPED_TRACE("num_splits " + std::to_string(splits));
      ASSERT_TRUE(derr.upload(std::vector<std::int32_t>{0}) && dout.upload(std::vector<std::uint16_t>(n, fill)) &&
                  dlse.upload(std::vector<float>(nl, fill_value)));
      decode_args a = good;
      a.cache.block_table.data = dt.data();
      a.error = derr.data();
      a.lse = dlse.data();
      a.num_splits = splits;
      ASSERT_TRUE(attention_decode(s, a));
      ASSERT_TRUE(synchronize(s));
      std::vector<std::int32_t> e;
      std::vector<std::uint16_t> out;
      std::vector<float> lse;
      ASSERT_TRUE(derr.download(e) && dout.download(out) && dlse.download(lse));
      EXPECT_EQ(e[0], 1);
      // out [2][sq][heads_q][d], lse [2][heads_q][sq]: sequence 0 holds the bad page.
      for (std::size_t i = 0; i < n; ++i) {
        const float x = from_bits(c.type, out[i]);
        if (i < n / 2)
          ASSERT_TRUE(std::isnan(x)) << "sequence 0 (the bad page), element " << i;
        else
          ASSERT_TRUE(std::isfinite(x) && out[i] != fill) << "sequence 1, element " << i << " = " << x;
      }
      for (std::size_t i = 0; i < nl; ++i) {
        if (i < nl / 2)
          ASSERT_TRUE(std::isnan(lse[i])) << "sequence 0's LSE " << i;
        else
          ASSERT_TRUE(std::isfinite(lse[i]) && lse[i] != fill_value) << "sequence 1's LSE " << i << " = " << lse[i];
      }
    }
    return;
  }
  std::vector<std::uint16_t> out;
  ASSERT_TRUE(dout.download(out));
  for (std::uint16_t x : out) ASSERT_EQ(x, nan_bits(c.type)) << "a rejected call must not write";
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionDecode, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
