// The Kokkos adapter on Kokkos' host execution space (the emulator runs the kernels): results, the
// stream it picks, extracted strides, and refused views.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>
#include <pk/interop/kokkos.hpp>

#include <cstdint>
#include <string>

namespace {

using host_space = Kokkos::DefaultHostExecutionSpace;

// Kokkos must be initialized once per process, before any view exists.
class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
const auto* const kokkos_env = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

TEST(KokkosAdapter, HostSpaceRunsOnTheEmulator) {
  pk::stream s;
  ASSERT_TRUE(pk::interop::make_stream(host_space(), s, "MI300X"));
  EXPECT_EQ(s.backend(), pk::backend_kind::host);
  EXPECT_NE(s.describe().find("MI300X"), std::string::npos) << s.describe();
  pk::stream d;
  ASSERT_TRUE(pk::interop::make_stream(host_space(), d));
  EXPECT_EQ(d.backend(), pk::backend_kind::host);
  EXPECT_FALSE(pk::interop::make_stream(host_space(), s, "No Such GPU"));
}

TEST(KokkosAdapter, ReduceSumMatchesOnEachArchFamily) {
  // Ragged length; multiples of 1/4 below 4, so every fp32 partial sum is exact.
  constexpr int n = 30011;
  Kokkos::View<float*, Kokkos::HostSpace> x("x", n);
  double expected = 0;
  for (int i = 0; i < n; ++i) {
    x(i) = static_cast<float>(i % 15) * 0.25f;
    expected += x(i);
  }
  for (const char* device : {"RTX 3090", "MI300X", "RX 7900 XTX"}) {
    SCOPED_TRACE(device);
    Kokkos::View<float, Kokkos::HostSpace> total("total");
    total() = -1.0f;  // poison
    const pk::status st = pk::interop::reduce_sum(host_space(), x, total, device);
    ASSERT_TRUE(st) << st.to_string();
    EXPECT_EQ(static_cast<double>(total()), expected);
  }
  // A rank-2 contiguous view and a rank-1 output of extent 1.
  Kokkos::View<const float**, Kokkos::HostSpace> x2(x.data(), 1, n);
  Kokkos::View<float[1], Kokkos::HostSpace> total1("total1");
  ASSERT_TRUE(pk::interop::reduce_sum(host_space(), x2, total1));
  EXPECT_EQ(static_cast<double>(total1(0)), expected);
}

TEST(KokkosAdapter, ReduceOtherOpsAndTypes) {
  constexpr int n = 1000;
  Kokkos::View<std::int32_t*, Kokkos::HostSpace> x("x", n);
  for (int i = 0; i < n; ++i) x(i) = (i * 37) % 101 - 50;  // max 50, first at the smallest i with i*37 % 101 == 100
  int first_max = -1;
  for (int i = 0; i < n && first_max < 0; ++i)
    if (x(i) == 50) first_max = i;
  Kokkos::View<std::int64_t, Kokkos::HostSpace> index("index");
  ASSERT_TRUE(pk::interop::reduce(host_space(), pk::reduce_op::argmax, x, index));
  EXPECT_EQ(index(), first_max);
  Kokkos::View<std::int32_t, Kokkos::HostSpace> smallest("smallest");
  ASSERT_TRUE(pk::interop::reduce(host_space(), pk::reduce_op::min, x, smallest, {}, "MI300X"));
  EXPECT_EQ(smallest(), -50);
  // argmax into a value-typed output is refused.
  EXPECT_EQ(pk::interop::reduce(host_space(), pk::reduce_op::argmax, x, smallest).code(), pk::errc::invalid_argument);
}

TEST(KokkosAdapter, ReduceAxisUsesTheViewsStrides) {
  constexpr int rows = 7, cols = 5;
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> m("m", rows, cols);  // column-major
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = r * 10 + c;
  Kokkos::View<double*, Kokkos::HostSpace> col_sum("col_sum", cols);
  const pk::status st = pk::interop::reduce_axis(host_space(), pk::reduce_op::sum, m, 0, col_sum);
  ASSERT_TRUE(st) << st.to_string();
  for (int c = 0; c < cols; ++c) EXPECT_EQ(col_sum(c), 10.0 * rows * (rows - 1) / 2 + double(c) * rows) << c;
}

TEST(KokkosAdapter, DescribeExtractsStrides) {
  Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace> a("a", 2, 3, 5);
  const auto d = pk::interop::describe(a);
  EXPECT_EQ(d.data, a.data());
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.extents[0], 2);
  EXPECT_EQ(d.extents[2], 5);
  EXPECT_EQ(d.strides[0], 15);
  EXPECT_EQ(d.strides[1], 5);
  EXPECT_EQ(d.strides[2], 1);
  EXPECT_TRUE(d.contiguous);
  Kokkos::View<float**, Kokkos::LayoutLeft, Kokkos::HostSpace> b("b", 4, 6);
  const auto e = pk::interop::describe(b);
  EXPECT_EQ(e.strides[0], 1);
  EXPECT_EQ(e.strides[1], 4);
}

TEST(KokkosAdapter, BadViewsReturnAStatus) {
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> m("m", 8, 8);
  Kokkos::View<float, Kokkos::HostSpace> total("total");
  auto column = Kokkos::subview(m, Kokkos::ALL, 3);
  pk::status st = pk::interop::reduce_sum(host_space(), column, total);
  EXPECT_EQ(st.code(), pk::errc::invalid_argument);
  EXPECT_NE(st.message().find("contiguous"), std::string::npos) << st.message();
  Kokkos::View<float*, Kokkos::HostSpace> two("two", 2);
  st = pk::interop::reduce_sum(host_space(), m, two);
  EXPECT_EQ(st.code(), pk::errc::invalid_argument);
  EXPECT_NE(st.message().find("one element"), std::string::npos) << st.message();
}

}  // namespace
