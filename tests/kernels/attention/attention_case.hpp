// The attention tests' shared case runner: one problem (shapes, masks, strides, varlen) with fresh
// random data, run through an entry point, checked against the double-precision CPU reference with
// FlashAttention's two-reference rule: max|out - ref| <= 2 max|naive - ref| + atol_noise, where naive is
// the same-precision computation in another order (S and softmax in fp32, P rounded to the input type,
// P V in fp32, output rounded) and atol_noise = 2 max|(ref + 0.3 - 0.3) - ref| evaluated in the output
// dtype. The same rule checks the fp32 LSE (its naive is the fp32 log-sum-exp; its noise also allows the
// kernel's base-2 roundings). Fully masked rows must give exactly 0 and -inf; outputs and LSE start as
// NaN, so every element must be written; the output's padding must stay untouched.
#pragma once
#include "../../common/backends.hpp"

#include <attention_reference.hpp>
#include <pk/attention/attention.hpp>
#include <pk/portable/numeric.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pk::test {

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
  bool rank3 = false;             // pass the tensors as rank 3 [tokens, heads, head_dim] (batch 1 or varlen)
  int kv_tail = 0;                // varlen: packed K/V tokens after the last sequence, NaN: no query may read them
  float key_ramp = 0;             // key token j of a sequence of n is scaled by 1 + key_ramp * j / n (rising maxima)
  //! Every field: a failure message with the label and the data seed reproduces the problem.
  std::string label() const {
    std::string s = std::string(to_string(type)) + " b" + std::to_string(batch) + " hq" + std::to_string(heads_q) +
                    " hkv" + std::to_string(heads_kv) + " d" + std::to_string(d) + (varlen ? " varlen" : "") +
                    (causal ? " causal" : "") + " win(" + std::to_string(window_left) + "," +
                    std::to_string(window_right) + ")" + (scale > 0 ? " scale " + std::to_string(scale) : "") +
                    (head_pad || row_pad ? " pad(head " + std::to_string(head_pad) + ", row " + std::to_string(row_pad) + ")" : "") +
                    (kv_interleaved ? " kv-interleaved" : "") + (rank3 ? " rank3" : "") +
                    (kv_tail ? " kv-tail " + std::to_string(kv_tail) : "") +
                    (key_ramp > 0 ? " key-ramp " + std::to_string(key_ramp) : "") + " " +
                    (policy.empty() ? "" : policy + " ") + "sq/sk";
    for (std::size_t i = 0; i < sq.size(); ++i) s += " " + std::to_string(sq[i]) + "/" + std::to_string(sk[i]);
    return s;
  }
};

inline std::uint16_t to_bits(dtype t, float f) { return t == dtype::bf16 ? to_bf16(f).bits : to_fp16(f).bits; }
inline float from_bits(dtype t, std::uint16_t b) { return t == dtype::bf16 ? float(bf16::from_bits(b)) : float(fp16::from_bits(b)); }
inline float round_to(dtype t, float f) { return from_bits(t, to_bits(t, f)); }
inline std::uint16_t nan_bits(dtype t) { return t == dtype::bf16 ? 0x7fc0u : 0x7e00u; }

// A device tensor laid out as [batch, seqlen, heads, d] (varlen: [1, total, heads, d]) with padding.
struct placed {
  std::vector<std::uint16_t> host;
  std::int64_t stride[4] = {0, 0, 0, 1};
};

// Places per-sequence logical data [s, heads, d] into a padded buffer; `slot`/`slots` interleave
// several tensors in one buffer (k and v sharing rows).
inline placed place(const attn_case& c, const std::vector<std::vector<float>>& seqs, const std::vector<int>& lens, int heads,
             int slots = 1, int tail = 0) {
  placed p;
  const std::int64_t hs = c.d + c.head_pad;
  const std::int64_t rs = hs * heads * slots + c.row_pad;
  std::int64_t total = 0, maxlen = 0;
  for (int l : lens) total += l, maxlen = std::max<std::int64_t>(maxlen, l);
  const std::int64_t bs = c.varlen ? 0 : maxlen * rs;
  const std::int64_t rows = c.varlen ? total + tail : maxlen * c.batch;
  p.stride[0] = bs;
  p.stride[1] = rs;
  p.stride[2] = hs;
  p.host.assign(static_cast<std::size_t>(std::max<std::int64_t>(rows * rs, 8)), nan_bits(c.type));
  return p;
}
inline void fill(const attn_case& c, placed& p, const std::vector<std::vector<float>>& seqs, const std::vector<int>& lens,
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

inline std::vector<float> random_seq(std::mt19937_64& rng, dtype t, std::size_t n) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = round_to(t, nd(rng));
  return v;
}

//! The entry point a case runs through: pk::attention_forward, or the C API (test_attention_c_api.cpp).
using attention_runner = std::function<status(const stream&, const attention_args&)>;

// Runs one case with data from seed `sd`; fails the test with the case label on any mismatch.
inline void run_case(const stream& s, const attn_case& c, std::uint64_t sd,
                     const attention_runner& run = [](const stream& st, const attention_args& a) {
                       return attention_forward(st, a);
                     }) {
  SCOPED_TRACE(c.label() + " (data seed " + std::to_string(sd) + ")");
  ASSERT_TRUE(!c.rank3 || c.varlen || c.batch == 1) << "rank 3 tensors hold one batch entry or packed tokens";
  std::mt19937_64 rng(sd);
  const int B = c.batch;
  std::vector<std::vector<float>> q(B), k(B), v(B);
  for (int b = 0; b < B; ++b) {
    q[b] = random_seq(rng, c.type, static_cast<std::size_t>(c.sq[b]) * c.heads_q * c.d);
    k[b] = random_seq(rng, c.type, static_cast<std::size_t>(c.sk[b]) * c.heads_kv * c.d);
    v[b] = random_seq(rng, c.type, static_cast<std::size_t>(c.sk[b]) * c.heads_kv * c.d);
    if (c.key_ramp > 0) {
      const std::size_t row = static_cast<std::size_t>(c.heads_kv) * c.d;
      for (std::size_t i = 0; i < k[b].size(); ++i)
        k[b][i] = round_to(c.type, k[b][i] * (1.0f + c.key_ramp * static_cast<float>(i / row) / static_cast<float>(c.sk[b])));
    }
  }
  placed pq = place(c, q, c.sq, c.heads_q), po = place(c, q, c.sq, c.heads_q);
  fill(c, pq, q, c.sq, c.heads_q, 0);
  placed pk_, pv_;
  const int slots = c.kv_interleaved ? 2 : 1;
  ASSERT_TRUE(c.kv_tail == 0 || c.varlen) << "kv_tail: packed (varlen) K/V only";
  pk_ = place(c, k, c.sk, c.heads_kv, slots, c.kv_tail);
  if (c.kv_interleaved) {
    fill(c, pk_, k, c.sk, c.heads_kv, 0);
    fill(c, pk_, v, c.sk, c.heads_kv, pk_.stride[2] * c.heads_kv);
  } else {
    pv_ = place(c, v, c.sk, c.heads_kv, 1, c.kv_tail);
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
    if (c.rank3) {  // [tokens, heads, head_dim]: the batch dimension dropped
      t.rank = 3;
      for (int i = 0; i < 3; ++i) t.shape[i] = t.shape[i + 1], t.stride[i] = t.stride[i + 1];
      t.shape[3] = t.stride[3] = 0;
    }
    return t;
  };
  const std::int64_t vb = c.varlen ? 1 : B;
  a.q = view(dq.data(), pq, vb, c.varlen ? total_q : max_q, c.heads_q);
  const std::int64_t k_tokens = c.varlen ? total_k + c.kv_tail : max_k;
  a.k = view(dk.data(), pk_, vb, k_tokens, c.heads_kv);
  a.v = c.kv_interleaved ? view(dk.data() + pk_.stride[2] * c.heads_kv, pk_, vb, k_tokens, c.heads_kv)
                         : view(dv.data(), pv_, vb, k_tokens, c.heads_kv);
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
  status st = run(s, a);
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

}  // namespace pk::test
