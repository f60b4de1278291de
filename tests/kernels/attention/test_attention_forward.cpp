// pk::attention_forward on every backend against a double-precision CPU reference, with FlashAttention's
// two-reference rule: max|out - ref| <= 2 max|naive - ref| + atol_noise, where naive is the same-precision
// computation in another order (S and softmax in fp32, P rounded to the input type, P V in fp32, output
// rounded) and atol_noise = 2 max|(ref + 0.3 - 0.3) - ref| evaluated in the output dtype. The same rule
// checks the fp32 LSE (its naive is the fp32 log-sum-exp; its noise also allows the kernel's base-2 roundings). Fully masked rows must give exactly 0 and -inf.
// Shapes: small on the emulator (it runs every lane as a fiber), the large ones only on GPUs.
#include "../../common/backends.hpp"

#include <attention_reference.hpp>
#include <pk/attention/attention.hpp>
#include <pk/portable/numeric.hpp>

#include <cmath>
#include <cstring>
#include <limits>

namespace pk::test {
namespace {

struct attn_case {
  dtype type = dtype::bf16;
  int batch = 1, heads_q = 1, heads_kv = 1, d = 64;
  std::vector<int> sq, sk;  // per batch entry
  bool varlen = false;
  bool causal = false;
  int window_left = -1, window_right = -1;
  float scale = 0;
  int head_pad = 0, row_pad = 0;  // extra elements between heads / tokens (multiples of 8)
  bool kv_interleaved = false;    // k and v in one buffer [b, s, 2, heads_kv, d]
  std::string policy;             // a forced candidate policy ("" = the planner's choice)
  std::string label() const {
    std::string s = std::string(to_string(type)) + " b" + std::to_string(batch) + " hq" + std::to_string(heads_q) +
                    " hkv" + std::to_string(heads_kv) + " d" + std::to_string(d) + (varlen ? " varlen" : "") +
                    (causal ? " causal" : "") + " win(" + std::to_string(window_left) + "," +
                    std::to_string(window_right) + ") " + (policy.empty() ? "" : policy + " ") + "sq/sk";
    for (std::size_t i = 0; i < sq.size(); ++i) s += " " + std::to_string(sq[i]) + "/" + std::to_string(sk[i]);
    return s;
  }
};

std::uint16_t to_bits(dtype t, float f) { return t == dtype::bf16 ? to_bf16(f).bits : to_fp16(f).bits; }
float from_bits(dtype t, std::uint16_t b) { return t == dtype::bf16 ? float(bf16::from_bits(b)) : float(fp16::from_bits(b)); }
float round_to(dtype t, float f) { return from_bits(t, to_bits(t, f)); }
std::uint16_t nan_bits(dtype t) { return t == dtype::bf16 ? 0x7fc0u : 0x7e00u; }

// A device tensor laid out as [batch, seqlen, heads, d] (varlen: [1, total, heads, d]) with padding.
struct placed {
  std::vector<std::uint16_t> host;
  std::int64_t stride[4] = {0, 0, 0, 1};
};

// Places per-sequence logical data [s, heads, d] into a padded buffer; `slot`/`slots` interleave
// several tensors in one buffer (k and v sharing rows).
placed place(const attn_case& c, const std::vector<std::vector<float>>& seqs, const std::vector<int>& lens, int heads,
             int slots = 1) {
  placed p;
  const std::int64_t hs = c.d + c.head_pad;
  const std::int64_t rs = hs * heads * slots + c.row_pad;
  std::int64_t total = 0, maxlen = 0;
  for (int l : lens) total += l, maxlen = std::max<std::int64_t>(maxlen, l);
  const std::int64_t bs = c.varlen ? 0 : maxlen * rs;
  const std::int64_t rows = c.varlen ? total : maxlen * c.batch;
  p.stride[0] = bs;
  p.stride[1] = rs;
  p.stride[2] = hs;
  p.host.assign(static_cast<std::size_t>(std::max<std::int64_t>(rows * rs, 8)), nan_bits(c.type));
  return p;
}
void fill(const attn_case& c, placed& p, const std::vector<std::vector<float>>& seqs, const std::vector<int>& lens,
          int heads, std::int64_t offset) {
  std::int64_t tok = 0;
  for (int b = 0; b < c.batch; ++b) {
    for (int i = 0; i < lens[b]; ++i)
      for (int h = 0; h < heads; ++h)
        for (int e = 0; e < c.d; ++e) {
          const std::int64_t at = offset + (c.varlen ? (tok + i) * p.stride[1] : b * p.stride[0] + i * p.stride[1]) +
                                  h * p.stride[2] + e;
          p.host[static_cast<std::size_t>(at)] =
              to_bits(c.type, seqs[b][(static_cast<std::size_t>(i) * heads + h) * c.d + e]);
        }
    tok += lens[b];
  }
}

struct device_u16 {
  device_buffer<std::uint16_t> buf;
};

std::vector<float> random_seq(std::mt19937_64& rng, dtype t, std::size_t n) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = round_to(t, nd(rng));
  return v;
}

// Runs one case; fails the test with the case label on any mismatch.
void run_case(const stream& s, const attn_case& c, std::uint64_t sd) {
  SCOPED_TRACE(c.label());
  std::mt19937_64 rng(sd);
  const int B = c.batch;
  std::vector<std::vector<float>> q(B), k(B), v(B);
  for (int b = 0; b < B; ++b) {
    q[b] = random_seq(rng, c.type, static_cast<std::size_t>(c.sq[b]) * c.heads_q * c.d);
    k[b] = random_seq(rng, c.type, static_cast<std::size_t>(c.sk[b]) * c.heads_kv * c.d);
    v[b] = random_seq(rng, c.type, static_cast<std::size_t>(c.sk[b]) * c.heads_kv * c.d);
  }
  placed pq = place(c, q, c.sq, c.heads_q), po = place(c, q, c.sq, c.heads_q);
  fill(c, pq, q, c.sq, c.heads_q, 0);
  placed pk_, pv_;
  const int slots = c.kv_interleaved ? 2 : 1;
  pk_ = place(c, k, c.sk, c.heads_kv, slots);
  if (c.kv_interleaved) {
    fill(c, pk_, k, c.sk, c.heads_kv, 0);
    fill(c, pk_, v, c.sk, c.heads_kv, pk_.stride[2] * c.heads_kv);
  } else {
    pv_ = place(c, v, c.sk, c.heads_kv);
    fill(c, pk_, k, c.sk, c.heads_kv, 0);
    fill(c, pv_, v, c.sk, c.heads_kv, 0);
  }
  std::int64_t total_q = 0, total_k = 0, max_q = 0, max_k = 0;
  std::vector<std::int32_t> cuq{0}, cuk{0};
  for (int b = 0; b < B; ++b) {
    total_q += c.sq[b], total_k += c.sk[b];
    max_q = std::max<std::int64_t>(max_q, c.sq[b]), max_k = std::max<std::int64_t>(max_k, c.sk[b]);
    cuq.push_back(static_cast<std::int32_t>(total_q));
    cuk.push_back(static_cast<std::int32_t>(total_k));
  }
  device_buffer<std::uint16_t> dq, dk, dv, dout;
  device_buffer<float> dlse;
  device_buffer<std::int32_t> dcuq, dcuk;
  ASSERT_TRUE(dq.allocate(s, pq.host.size()));
  ASSERT_TRUE(dq.upload(pq.host));
  ASSERT_TRUE(dk.allocate(s, pk_.host.size()));
  ASSERT_TRUE(dk.upload(pk_.host));
  if (!c.kv_interleaved) {
    ASSERT_TRUE(dv.allocate(s, pv_.host.size()));
    ASSERT_TRUE(dv.upload(pv_.host));
  }
  ASSERT_TRUE(dout.allocate(s, po.host.size()));
  ASSERT_TRUE(dout.upload(po.host));  // poison (NaN) everywhere
  const std::int64_t lse_n = std::max<std::int64_t>(1, c.varlen ? c.heads_q * total_q : B * c.heads_q * max_q);
  ASSERT_TRUE(dlse.allocate(s, static_cast<std::size_t>(lse_n)));
  ASSERT_TRUE(dlse.upload(std::vector<float>(static_cast<std::size_t>(lse_n), std::nanf(""))));

  attention_args a;
  auto view = [&](const void* data, const placed& p, std::int64_t b, std::int64_t len, int heads) {
    tensor_view t;
    t.data = data;
    t.type = c.type;
    t.rank = 4;
    t.shape[0] = b;
    t.shape[1] = len;
    t.shape[2] = heads;
    t.shape[3] = c.d;
    for (int i = 0; i < 4; ++i) t.stride[i] = p.stride[i];
    return t;
  };
  const std::int64_t vb = c.varlen ? 1 : B;
  a.q = view(dq.data(), pq, vb, c.varlen ? total_q : max_q, c.heads_q);
  a.k = view(dk.data(), pk_, vb, c.varlen ? total_k : max_k, c.heads_kv);
  a.v = c.kv_interleaved ? view(dk.data() + pk_.stride[2] * c.heads_kv, pk_, vb, c.varlen ? total_k : max_k, c.heads_kv)
                         : view(dv.data(), pv_, vb, c.varlen ? total_k : max_k, c.heads_kv);
  a.out = view(dout.data(), po, vb, c.varlen ? total_q : max_q, c.heads_q);
  a.lse = dlse.data();
  a.softmax_scale = c.scale;
  a.causal = c.causal;
  a.window_left = c.window_left;
  a.window_right = c.window_right;
  a.policy = c.policy.empty() ? nullptr : c.policy.c_str();
  if (c.varlen) {
    ASSERT_TRUE(dcuq.allocate(s, cuq.size()));
    ASSERT_TRUE(dcuq.upload(cuq));
    ASSERT_TRUE(dcuk.allocate(s, cuk.size()));
    ASSERT_TRUE(dcuk.upload(cuk));
    a.cu_seqlens_q = dcuq.data();
    a.cu_seqlens_k = dcuk.data();
    a.varlen_batch = B;
    a.max_seqlen_q = static_cast<int>(max_q);
    a.max_seqlen_k = static_cast<int>(max_k);
  }
  status st = attention_forward(s, a);
  if (st) st = synchronize(s);
  ASSERT_TRUE(st) << st.to_string();
  std::vector<std::uint16_t> out;
  std::vector<float> lse;
  ASSERT_TRUE(dout.download(out));
  ASSERT_TRUE(dlse.download(lse));

  const double scale = c.scale > 0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.d));
  const auto rnd = [&](float x) { return round_to(c.type, x); };
  double err = 0, err_naive = 0, noise = 0, lerr = 0, lerr_naive = 0, lnoise = 0;
  std::int64_t tok = 0, checked = 0, masked_rows = 0;
  for (int b = 0; b < B; ++b) {
    attention::reference::mask m{c.sq[b], c.sk[b], c.causal, c.window_left, c.window_right};
    std::vector<double> ref, ref_lse, nv, nv_lse;
    attention::reference::forward(q[b].data(), k[b].data(), v[b].data(), c.heads_q, c.heads_kv, c.d, m, scale, false,
                                  rnd, ref, ref_lse);
    attention::reference::forward(q[b].data(), k[b].data(), v[b].data(), c.heads_q, c.heads_kv, c.d, m, scale, true,
                                  rnd, nv, nv_lse);
    for (int i = 0; i < c.sq[b]; ++i)
      for (int h = 0; h < c.heads_q; ++h) {
        const std::size_t li = c.varlen ? static_cast<std::size_t>(h * total_q + tok + i)
                                        : static_cast<std::size_t>((b * c.heads_q + h) * max_q + i);
        const double rl = ref_lse[static_cast<std::size_t>(h) * c.sq[b] + i];
        const bool dead = std::isinf(rl);
        if (dead) {
          ++masked_rows;
          ASSERT_TRUE(std::isinf(lse[li]) && lse[li] < 0) << "fully masked row " << i << " head " << h << ": lse " << lse[li];
        } else {
          ASSERT_TRUE(std::isfinite(lse[li])) << "row " << i << " head " << h << ": lse " << lse[li];
          lerr = std::max(lerr, std::abs(lse[li] - rl));
          lerr_naive = std::max(lerr_naive, std::abs(nv_lse[static_cast<std::size_t>(h) * c.sq[b] + i] - rl));
          // The kernel's LSE passes through base 2 (the scale folded into log2(e), then times ln 2):
          // two more fp32 roundings than the naive one, a few ulps of max(1, |lse|).
          const float rf = static_cast<float>(rl);
          lnoise = std::max({lnoise, std::abs(static_cast<double>((rf + 0.3f) - 0.3f) - rf),
                             4 * numeric_traits<float>::epsilon() * std::max(1.0, std::abs(rl))});
        }
        for (int e = 0; e < c.d; ++e) {
          const std::int64_t at = (c.varlen ? (tok + i) * po.stride[1] : b * po.stride[0] + i * po.stride[1]) +
                                  h * po.stride[2] + e;
          const double got = from_bits(c.type, out[static_cast<std::size_t>(at)]);
          const std::size_t ri = (static_cast<std::size_t>(i) * c.heads_q + h) * c.d + e;
          ASSERT_TRUE(std::isfinite(got)) << "row " << i << " head " << h << " col " << e << ": " << got;
          if (dead) {
            ASSERT_EQ(got, 0.0) << "fully masked row " << i << " head " << h;
            continue;
          }
          err = std::max(err, std::abs(got - ref[ri]));
          err_naive = std::max(err_naive, std::abs(nv[ri] - ref[ri]));
          const float r16 = rnd(static_cast<float>(ref[ri]));
          noise = std::max(noise, std::abs(static_cast<double>(rnd(rnd(r16 + 0.3f) - 0.3f)) - r16));
          ++checked;
        }
      }
    tok += c.sq[b];
  }
  // Padding of the output (between heads and rows) stays untouched.
  for (std::size_t i = 0; i < out.size() && (c.head_pad > 0 || c.row_pad > 0); ++i) {
    const std::int64_t in_row = static_cast<std::int64_t>(i) % po.stride[1];
    if (in_row >= po.stride[2] * c.heads_q || in_row % po.stride[2] >= c.d)
      ASSERT_EQ(out[i], nan_bits(c.type)) << "the kernel wrote padding at element " << i;
  }
  const double tol = 2 * err_naive + 2 * noise;
  const double ltol = 2 * lerr_naive + 2 * lnoise;
  EXPECT_LE(err, tol) << "out: max err " << err << ", naive " << err_naive << ", noise " << noise << " (" << checked
                      << " values, " << masked_rows << " fully masked rows)";
  EXPECT_LE(lerr, ltol) << "lse: max err " << lerr << ", naive " << lerr_naive << ", noise " << lnoise;
}

class AttentionForward : public ::testing::TestWithParam<backend_param> {
 protected:
  bool on_gpu() const { return GetParam().gpu; }
};

// Bigger shapes only where the hardware runs them (the emulator runs each lane as a fiber).
std::vector<int> seqlens(bool gpu) {
  std::vector<int> v{1, 17, 113, 239};
  if (gpu) v.insert(v.end(), {799, 1025});
  return v;
}

TEST_P(AttentionForward, SeqlensCausalAndNot) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int n : seqlens(on_gpu()))
    for (bool causal : {false, true}) {
      attn_case c;
      c.batch = 2;
      c.heads_q = c.heads_kv = 2;
      c.d = 64;
      c.sq = c.sk = {n, n};
      c.causal = causal;
      run_case(s, c, sd + n);
    }
}

TEST_P(AttentionForward, EveryHeadDimBothDtypes) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const int n = on_gpu() ? 257 : 71;
  for (int d : {32, 64, 96, 128, 192, 256})
    for (dtype t : {dtype::bf16, dtype::f16}) {
      attn_case c;
      c.type = t;
      c.d = d;
      c.sq = {n};
      c.sk = {n + 9};
      c.causal = d % 64 == 0;
      run_case(s, c, sd + d);
    }
}

TEST_P(AttentionForward, CausalUnequalLengthsAndFullyMaskedRows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  // seqlen_q > seqlen_k under causal: the first seqlen_q - seqlen_k rows see no key (0, -inf).
  const std::vector<std::pair<int, int>> shapes = on_gpu() ? std::vector<std::pair<int, int>>{{113, 203}, {203, 113}, {1, 239}, {239, 1}, {799, 3}, {1023, 1024}}
                                                           : std::vector<std::pair<int, int>>{{113, 203}, {203, 113}, {1, 239}, {239, 1}, {67, 3}};
  for (auto [q, k] : shapes) {
    attn_case c;
    c.heads_q = 2;
    c.heads_kv = 1;
    c.d = 128;
    c.sq = {q};
    c.sk = {k};
    c.causal = true;
    run_case(s, c, sd + q * 7 + k);
  }
}

TEST_P(AttentionForward, GroupedQueryHeads) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int ratio : {1, 4, 8}) {
    attn_case c;
    c.heads_q = 8;
    c.heads_kv = 8 / ratio;
    c.d = 64;
    c.sq = {on_gpu() ? 300 : 45};
    c.sk = {on_gpu() ? 333 : 77};
    c.causal = ratio == 4;
    run_case(s, c, sd + ratio);
  }
}

TEST_P(AttentionForward, VariableLengthWithEmptyAndSingleTokenSequences) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (bool causal : {false, true}) {
    attn_case c;
    c.varlen = true;
    c.batch = 6;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.d = 64;
    c.sq = {0, 1, 37, 130, 5, 9};
    c.sk = {3, 1, 37, 150, 0, 1};
    if (on_gpu()) c.sq[3] = 700, c.sk[3] = 900;
    c.causal = causal;
    run_case(s, c, sd + causal);
  }
}

TEST_P(AttentionForward, SlidingWindows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const std::vector<std::pair<int, int>> windows{{16, 0}, {8, 24}, {-1, 5}, {0, 0}, {40, -1}};
  for (auto [l, r] : windows)
    for (auto [q, k] : std::vector<std::pair<int, int>>{{129, 129}, {70, 150}}) {
      attn_case c;
      c.d = 96;
      c.sq = {q};
      c.sk = {k};
      c.window_left = l;
      c.window_right = r;
      run_case(s, c, sd + l * 31 + r + q);
    }
}

TEST_P(AttentionForward, NonContiguousStridesAndCustomScale) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  attn_case c;
  c.type = dtype::f16;
  c.batch = 2;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.d = 128;
  c.sq = {80, 80};
  c.sk = {97, 97};
  c.head_pad = 8;
  c.row_pad = 24;
  c.kv_interleaved = true;
  c.scale = 0.2f;
  c.causal = true;
  run_case(s, c, sd);
}

// Every compiled candidate that fits the device (not only the planner's pick) on ragged causal shapes.
TEST_P(AttentionForward, EveryCandidatePolicy) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int d : {64, 128, 256}) {
    attention::attention_problem pr;
    pr.head_dim = d;
    pr.seqlen_q = 150;
    pr.seqlen_k = 201;
    pr.causal = true;
    const auto pl = attention::plan(s.device(), pr);
    int ran = 0;
    for (const auto& cand : pl.choice.all) {
      if (!cand.fits) continue;
      attn_case c;
      c.d = d;
      c.heads_q = 2;
      c.heads_kv = 1;
      c.sq = {150};
      c.sk = {201};
      c.causal = true;
      c.policy = cand.name;
      run_case(s, c, sd + d);
      ++ran;
    }
    EXPECT_GT(ran, 0) << "no candidate fits " << s.device().name;
  }
  attn_case c;
  c.policy = "attn_fwd_bf16_d64_b1x1_t1_s1";
  c.sq = c.sk = {8};
  attention_args a;
  device_buffer<std::uint16_t> buf;
  ASSERT_TRUE(buf.allocate(s, 8 * 64));
  a.q.data = a.k.data = a.v.data = a.out.data = buf.data();
  for (tensor_view* t : {&a.q, &a.k, &a.v, &a.out}) {
    t->type = dtype::bf16;
    t->rank = 4;
    t->shape[0] = 1, t->shape[1] = 8, t->shape[2] = 1, t->shape[3] = 64;
    t->stride[0] = 8 * 64, t->stride[1] = 64, t->stride[2] = 64, t->stride[3] = 1;
  }
  a.policy = c.policy.c_str();
  const status st = attention_forward(s, a);
  EXPECT_EQ(st.code(), errc::unsupported) << st.to_string();
  EXPECT_NE(st.message().find("policy"), std::string::npos) << st.to_string();
}

// Bad input: a clear status naming the argument, and nothing launched.
TEST_P(AttentionForward, BadInputNamesTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<std::uint16_t> buf;
  ASSERT_TRUE(buf.allocate(s, 4 * 64 * 64 + 64));
  auto view = [&](std::int64_t heads, std::int64_t d) {
    tensor_view t;
    t.data = buf.data();
    t.type = dtype::bf16;
    t.rank = 4;
    t.stride[3] = 1;
    t.shape[0] = 1;
    t.shape[1] = 16;
    t.shape[2] = heads;
    t.shape[3] = d;
    t.stride[2] = d;
    t.stride[1] = heads * d;
    t.stride[0] = 16 * heads * d;
    return t;
  };
  auto good = [&] {
    attention_args a;
    a.q = a.out = view(4, 64);
    a.k = a.v = view(2, 64);
    return a;
  };
  auto expect = [&](const attention_args& a, errc code, const char* word) {
    const status st = attention_forward(s, a);
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(word), std::string::npos) << st.to_string();
  };
  ASSERT_TRUE(attention_forward(s, good())) << "the baseline arguments must be valid";
  {
    auto a = good();
    a.k = a.v = view(3, 64);
    expect(a, errc::invalid_argument, "heads_kv");
  }
  {
    auto a = good();
    a.v = view(1, 64);
    expect(a, errc::invalid_argument, "v: heads");
  }
  {
    auto a = good();
    a.q = a.out = view(4, 80);
    a.k = a.v = view(2, 80);
    expect(a, errc::unsupported, "head_dim 80");
  }
  {
    auto a = good();
    a.v.rank = 3;
    expect(a, errc::invalid_argument, "v: rank 3 must be 4");
  }
  {
    auto a = good();
    a.q.type = dtype::f32;
    expect(a, errc::unsupported, "q: dtype f32");
  }
  {
    auto a = good();
    a.k.type = dtype::f16;
    expect(a, errc::invalid_argument, "k: dtype f16");
  }
  {
    auto a = good();
    a.k.data = buf.data() + 1;
    expect(a, errc::invalid_argument, "k: data must be 16-byte aligned");
  }
  {
    auto a = good();
    a.v.data = nullptr;
    expect(a, errc::invalid_argument, "v: data must not be null");
  }
  {
    auto a = good();
    a.q.stride[1] = 4 * 64 + 4;
    expect(a, errc::invalid_argument, "q: stride[1]");
  }
  {
    auto a = good();
    a.out.stride[3] = 2;
    expect(a, errc::invalid_argument, "out: the last dimension");
  }
  {
    auto a = good();
    a.window_left = -2;
    expect(a, errc::invalid_argument, "window_left");
  }
  {
    auto a = good();
    a.softmax_scale = -1.0f;
    expect(a, errc::invalid_argument, "softmax_scale");
  }
  {
    auto a = good();
    a.cu_seqlens_q = reinterpret_cast<const std::int32_t*>(buf.data());
    expect(a, errc::invalid_argument, "cu_seqlens");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionForward, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
