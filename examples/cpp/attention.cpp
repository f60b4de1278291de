// The attention part of the C++ example: a causal bf16 forward pass checked against a CPU reference.
#include "attention_check.hpp"

#include <pk/attention/attention.hpp>
#include <pk/portable/numeric.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace {

// Attention problem: [batch, seqlen, heads, head_dim], causal.
constexpr int batch = 1, seqlen = 48, heads = 2, head_dim = 64;
constexpr std::size_t elems = std::size_t{batch} * seqlen * heads * head_dim;

// out = softmax(q k^T / sqrt(d), causal) v on the CPU, in double, from the bf16 inputs.
std::vector<double> attention_reference(const std::vector<pk::bf16>& q, const std::vector<pk::bf16>& k,
                                        const std::vector<pk::bf16>& v) {
  std::vector<double> out(elems);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto at = [](int t, int h, int d) { return (static_cast<std::size_t>(t) * heads + h) * head_dim + d; };
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < seqlen; ++i) {
      std::vector<double> p(static_cast<std::size_t>(i) + 1);
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < head_dim; ++d) dot += static_cast<float>(q[at(i, h, d)]) * static_cast<double>(static_cast<float>(k[at(j, h, d)]));
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (int d = 0; d < head_dim; ++d) {
        double o = 0;
        for (int j = 0; j <= i; ++j) o += p[j] * static_cast<float>(v[at(j, h, d)]);
        out[at(i, h, d)] = o / sum;
      }
    }
  return out;
}

// Attention on `s`; returns the largest |out - reference|.
pk::status device_attention(const pk::stream& s, const std::vector<pk::bf16>& q, const std::vector<pk::bf16>& k,
                            const std::vector<pk::bf16>& v, const std::vector<double>& reference, double& max_error) {
  pk::device_buffer<pk::bf16> dq, dk, dv, dout;
  for (auto* b : {&dq, &dk, &dv, &dout}) PK_TRY(b->allocate(s, elems));
  PK_TRY(dq.upload(q));
  PK_TRY(dk.upload(k));
  PK_TRY(dv.upload(v));
  // Contiguous [batch, seqlen, heads, head_dim]: strides in elements.
  const std::int64_t shape[4] = {batch, seqlen, heads, head_dim};
  const std::int64_t stride[4] = {std::int64_t{seqlen} * heads * head_dim, std::int64_t{heads} * head_dim, head_dim, 1};
  auto view = [&](const pk::device_buffer<pk::bf16>& b) {
    pk::tensor_view t;
    t.data = b.data();
    t.type = pk::dtype::bf16;
    t.rank = 4;
    std::copy(shape, shape + 4, t.shape);
    std::copy(stride, stride + 4, t.stride);
    return t;
  };
  pk::attention_args a;
  a.q = view(dq);
  a.k = view(dk);
  a.v = view(dv);
  a.out = view(dout);
  a.causal = true;
  PK_TRY(pk::attention_forward(s, a));
  std::vector<pk::bf16> out;
  PK_TRY(dout.download(out));
  max_error = 0;
  for (std::size_t i = 0; i < elems; ++i)
    max_error = std::max(max_error, std::fabs(static_cast<double>(static_cast<float>(out[i])) - reference[i]));
  return {};
}

}  // namespace

int attention_checks(const std::vector<pk::stream>& streams, std::mt19937& gen) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int failures = 0;
  // Attention: random bf16 inputs in [-1, 1]. Outputs are convex combinations of v (|out| <= 1), rounded
  // to bf16 (8 significant bits) after fp32 accumulation: 2^-7 absolute bounds the error.
  std::vector<pk::bf16> q(elems), k(elems), v(elems);
  for (auto* t : {&q, &k, &v})
    for (pk::bf16& x : *t) x = pk::bf16(dist(gen));
  const std::vector<double> reference_attention = attention_reference(q, k, v);
  const double attention_tolerance = 0x1p-7;
  for (const pk::stream& s : streams) {
    double max_error = 0;
    if (auto st = device_attention(s, q, k, v, reference_attention, max_error); !st) {
      std::fprintf(stderr, "%s: %s\n", s.describe().c_str(), st.to_string().c_str());
      ++failures;
      continue;
    }
    std::printf("%-50s attention [%d, %d, %d, %d] causal: max |error| %.2e (bound %.2e)\n", s.describe().c_str(), batch,
                seqlen, heads, head_dim, max_error, attention_tolerance);
    if (max_error > attention_tolerance) ++failures;
  }

  return failures;
}
