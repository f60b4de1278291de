// Every public header of the kernel families and the runtime, included together in one translation
// unit: they must be self-contained and must not define the same name twice.
#include <pk/archdb/device.hpp>
#include <pk/archdb/occupancy.hpp>
#include <pk/archdb/planner.hpp>
#include <pk/archdb/tuning_cache.hpp>
#include <pk/attention/attention.hpp>
#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>
#include <pk/tensor.hpp>

#include <gtest/gtest.h>

namespace {

TEST(Headers, FamiliesShareOneTensorView) {
  static_assert(std::is_same_v<pk::reduction::dtype, pk::dtype>);
  static_assert(pk::dtype_of<pk::bf16> == pk::dtype::bf16);
  static_assert(pk::size_of(pk::dtype::f64) == 8);
  const std::int64_t shape[4] = {2, 3, 4, 5};
  const pk::tensor_view t = pk::contiguous(nullptr, pk::dtype::bf16, shape);
  EXPECT_EQ(t.rank, 4);
  EXPECT_EQ(t.stride[0], 60);
  EXPECT_EQ(t.stride[1], 20);
  EXPECT_EQ(t.stride[2], 5);
  EXPECT_EQ(t.stride[3], 1);
  pk::attention_args a;
  a.q = t;
  EXPECT_EQ(a.q.type, pk::dtype::bf16);
}

}  // namespace
