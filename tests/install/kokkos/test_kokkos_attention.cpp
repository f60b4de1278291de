// The Kokkos adapter's attention on the host space: strided (sub)views, causal mask. With q = 0 every
// score is equal, so row i of the output is the mean of v over the keys it sees (j <= i): an exact
// reference independent of the kernel's tiling.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>
#include <pk/interop/kokkos_attention.hpp>

#include <cmath>
#include <string>

namespace {

using host_space = Kokkos::DefaultHostExecutionSpace;

TEST(KokkosAdapter, AttentionOnStridedSubviews) {
  constexpr int batch = 1, seqlen = 16, all_heads = 4, heads = 2, head_dim = 32;
  using view4 = Kokkos::View<pk::bf16****, Kokkos::LayoutRight, Kokkos::HostSpace>;
  view4 q_all("q", batch, seqlen, all_heads, head_dim), k_all("k", batch, seqlen, all_heads, head_dim),
      v_all("v", batch, seqlen, all_heads, head_dim), out("out", batch, seqlen, heads, head_dim);
  for (int t = 0; t < seqlen; ++t)
    for (int h = 0; h < all_heads; ++h)
      for (int d = 0; d < head_dim; ++d) {
        q_all(0, t, h, d) = pk::bf16(0.0f);
        k_all(0, t, h, d) = pk::bf16(static_cast<float>((t + d) % 5) - 2.0f);
        // Small multiples of 1/4: exact in bf16.
        v_all(0, t, h, d) = pk::bf16(static_cast<float>((3 * t + 5 * h + d) % 9) * 0.25f - 1.0f);
      }
  // Heads 1 and 2 of 4: LayoutStride views whose strides differ from their extents.
  const auto heads_sel = Kokkos::make_pair(1, 1 + heads);
  auto q = Kokkos::subview(q_all, Kokkos::ALL, Kokkos::ALL, heads_sel, Kokkos::ALL);
  auto k = Kokkos::subview(k_all, Kokkos::ALL, Kokkos::ALL, heads_sel, Kokkos::ALL);
  auto v = Kokkos::subview(v_all, Kokkos::ALL, Kokkos::ALL, heads_sel, Kokkos::ALL);
  ASSERT_EQ(q.stride(2), head_dim);
  ASSERT_EQ(q.stride(1), all_heads * head_dim);

  for (const char* device : {"RTX 3090", "MI300X", "RX 7900 XTX"}) {
    SCOPED_TRACE(device);
    Kokkos::deep_copy(out, pk::bf16(NAN));  // poison
    pk::attention_args opts;
    opts.causal = true;
    const pk::status st = pk::interop::attention_forward(host_space(), q, k, v, out, opts, device);
    ASSERT_TRUE(st) << st.to_string();
    // The output is rounded to bf16 (8 significant bits) from an fp32 accumulation: |out| <= 1, so
    // 2^-8 bounds the rounding, and the fp32 weights add far less.
    const double tolerance = 0x1p-8;
    for (int i = 0; i < seqlen; ++i)
      for (int h = 0; h < heads; ++h)
        for (int d = 0; d < head_dim; ++d) {
          double mean = 0;
          for (int j = 0; j <= i; ++j) mean += static_cast<float>(v(0, j, h, d));
          mean /= i + 1;
          ASSERT_NEAR(static_cast<float>(out(0, i, h, d)), mean, tolerance) << "i " << i << " h " << h << " d " << d;
        }
  }
}

TEST(KokkosAdapter, AttentionBadShapesReturnAStatus) {
  Kokkos::View<pk::bf16****, Kokkos::LayoutRight, Kokkos::HostSpace> q("q", 1, 8, 2, 32), bad("bad", 1, 8, 3, 32);
  const pk::status st = pk::interop::attention_forward(host_space(), q, q, q, bad);
  EXPECT_EQ(st.code(), pk::errc::invalid_argument) << st.to_string();
  EXPECT_FALSE(st.message().empty());
}

}  // namespace
