// Attention forward on the CPU: the double-precision reference and the same-precision "naive" one
// (FlashAttention's two-reference test rule). Sequences are given per batch entry in a dense logical
// layout [seqlen, heads, head_dim]; values are the (already rounded) 16-bit inputs as float.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace pk::attention::reference {

struct mask {
  int seqlen_q = 0, seqlen_k = 0;
  bool causal = false;
  int window_left = -1, window_right = -1;
  //! Whether query i sees key j (bottom-right aligned diagonal). In 64 bits: windows go up to INT_MAX.
  [[nodiscard]] bool allowed(std::int64_t i, std::int64_t j) const {
    const std::int64_t diag = std::int64_t{seqlen_k} - seqlen_q;
    const std::int64_t right = causal ? 0 : window_right;
    if (right >= 0 && j > i + diag + right) return false;
    if (window_left >= 0 && j < i + diag - window_left) return false;
    return true;
  }
};

//! One sequence of one batch entry. out: [seqlen_q, heads_q, d]; lse: [heads_q, seqlen_q].
//! `Round` maps a float to the input type and back (for the naive path).
template <class Round>
void forward(const float* q, const float* k, const float* v, int heads_q, int heads_kv, int d, const mask& m,
             double scale, bool naive, Round round, std::vector<double>& out, std::vector<double>& lse) {
  const int sq = m.seqlen_q, sk = m.seqlen_k, group = heads_q / heads_kv;
  out.assign(static_cast<std::size_t>(sq) * heads_q * d, 0.0);
  lse.assign(static_cast<std::size_t>(heads_q) * sq, -std::numeric_limits<double>::infinity());
  std::vector<double> s(static_cast<std::size_t>(sk));
  std::vector<float> sf(static_cast<std::size_t>(sk));
  for (int h = 0; h < heads_q; ++h) {
    const int hk = h / group;
    for (int i = 0; i < sq; ++i) {
      const float* qi = q + (static_cast<std::size_t>(i) * heads_q + h) * d;
      double mx = -std::numeric_limits<double>::infinity();
      float mxf = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < sk; ++j) {
        if (!m.allowed(i, j)) continue;
        const float* kj = k + (static_cast<std::size_t>(j) * heads_kv + hk) * d;
        double acc = 0;
        float accf = 0;
        for (int e = 0; e < d; ++e) {
          acc += static_cast<double>(qi[e]) * kj[e];
          accf += qi[e] * kj[e];
        }
        s[j] = acc * scale;
        sf[j] = accf * static_cast<float>(scale);
        mx = std::max(mx, s[j]);
        mxf = std::max(mxf, sf[j]);
      }
      if (mx == -std::numeric_limits<double>::infinity()) continue;  // fully masked: 0 and -inf
      double l = 0;
      float lf = 0;
      for (int j = 0; j < sk; ++j) {
        if (!m.allowed(i, j)) continue;
        l += std::exp(s[j] - mx);
        lf += std::exp(sf[j] - mxf);
      }
      lse[static_cast<std::size_t>(h) * sq + i] = naive ? std::log(static_cast<double>(lf)) + mxf : std::log(l) + mx;
      double* oi = out.data() + (static_cast<std::size_t>(i) * heads_q + h) * d;
      std::vector<float> of(static_cast<std::size_t>(d), 0.0f);
      for (int j = 0; j < sk; ++j) {
        if (!m.allowed(i, j)) continue;
        const float* vj = v + (static_cast<std::size_t>(j) * heads_kv + hk) * d;
        if (naive) {
          const float p = round(std::exp(sf[j] - mxf) / lf);
          for (int e = 0; e < d; ++e) of[e] += p * vj[e];
        } else {
          const double p = std::exp(s[j] - mx) / l;
          for (int e = 0; e < d; ++e) oi[e] += p * vj[e];
        }
      }
      if (naive)
        for (int e = 0; e < d; ++e) oi[e] = round(of[e]);
    }
  }
}

}  // namespace pk::attention::reference
