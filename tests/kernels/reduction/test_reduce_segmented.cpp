// Segmented reduce and reduce along an axis of a strided tensor, on every backend: every op x dtype,
// empty and one-element segments, every per-segment policy (a warp per segment and a block per
// segment), the last axis and non-contiguous axes; outputs poisoned, every element checked exactly.
#include "reduce_test_util.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace pk::test {
namespace {
using namespace red;

class ReduceSegmented : public ::testing::TestWithParam<backend_param> {};

constexpr reduce_op all_ops[] = {reduce_op::sum, reduce_op::prod, reduce_op::min,
                                 reduce_op::max, reduce_op::argmin, reduce_op::argmax};

// Segment lengths: empty, one element, warp and block boundaries, a prime tail; offsets start at 3
// so that segments are misaligned in every way.
const std::vector<std::int64_t> seg_lengths = {0, 1, 31, 32, 33, 0, 64, 65, 1, 255, 256, 257, 0, 1023, 1025, 4099, 7};

template <class T, class Out>
void check_outputs(const std::vector<Out>& got, const std::vector<T>& h, reduce_op op,
                   const std::vector<std::int64_t>& offsets) {
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    const T* x = h.data() + offsets[i];
    const std::int64_t len = offsets[i + 1] - offsets[i];
    if (op == reduce_op::argmin || op == reduce_op::argmax) {
      ASSERT_EQ(static_cast<std::int64_t>(got[i]), ref_index(op, x, len)) << "segment " << i << " length " << len;
    } else if constexpr (std::is_same_v<Out, T>) {
      const T want = ref_value(op, x, len);
      ASSERT_TRUE(same(got[i], want)) << "segment " << i << " length " << len << " got " << show(got[i]) << " want "
                                      << show(want);
    }
  }
}

//! Every compiled candidate of pk::segmented_reduce by name (the even split, then the per-segment
//! kernels), and "" for the planner's choice.
std::vector<std::string> segmented_policies() {
  std::vector<std::string> names{""};
  for (const auto& p : reduction::split_candidates) names.push_back(reduction::name_of(p));
  for (const auto& p : reduction::segment_candidates) names.push_back(reduction::name_of(p));
  return names;
}

//! Segments of the given lengths after `first` unused elements (and 5 after the last), every output
//! poisoned and checked exactly, one past the last checked untouched.
template <class T>
void check_segmented(const stream& s, reduce_op op, std::uint64_t sd, const std::string& policy,
                     const std::vector<std::int64_t>& lengths, std::int64_t first = 3) {
  SCOPED_TRACE(std::string(to_string(op)) + " " + reduction::to_string(reduction::dtype_of<T>) + " policy " +
               (policy.empty() ? std::string("(planned)") : policy) + ", " + std::to_string(lengths.size()) +
               " segments");
  std::vector<std::int64_t> offsets = {first};
  for (std::int64_t l : lengths) offsets.push_back(offsets.back() + l);
  const auto h = gen<T>(op, static_cast<std::size_t>(offsets.back() + 5), sd);
  auto in = upload_padded(s, h);
  device_buffer<std::int64_t> off;
  ASSERT_TRUE(off.allocate(s, offsets.size()));
  ASSERT_TRUE(off.upload(offsets));
  const std::int64_t segs = static_cast<std::int64_t>(lengths.size());
  reduce_options opt;
  if (!policy.empty()) opt.policy = policy.c_str();
  const auto run = [&](auto poison_value) {
    using Out = decltype(poison_value);
    device_buffer<Out> out;
    ASSERT_TRUE(out.allocate(s, lengths.size() + 1));
    std::vector<Out> p(lengths.size() + 1, poison_value);
    ASSERT_TRUE(out.upload(p));
    const status st = segmented_reduce(s, op, reduction::dtype_of<T>, in.data(), segs, off.data(), out.data(), opt);
    ASSERT_TRUE(st) << st.to_string();
    ASSERT_TRUE(synchronize(s));
    std::vector<Out> r;
    ASSERT_TRUE(out.download(r));
    check_outputs(r, h, op, offsets);
    ASSERT_TRUE(same(r.back(), poison_value)) << "wrote past the last segment";
  };
  if (op == reduce_op::argmin || op == reduce_op::argmax) {
    run(std::int64_t{-7});
  } else {
    run(poison<T>());
  }
}

template <class T>
void segmented_all_ops(const stream& s, std::uint64_t sd) {
  for (reduce_op op : all_ops) {
    if (!arith(reduction::dtype_of<T>) && (op == reduce_op::sum || op == reduce_op::prod)) continue;
    for (const std::string& policy : segmented_policies()) {
      check_segmented<T>(s, op, sd, policy, seg_lengths);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(ReduceSegmented, EveryOpEveryTypeEveryPolicy) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  segmented_all_ops<double>(s, sd);
  segmented_all_ops<float>(s, sd);
  segmented_all_ops<fp16>(s, sd);
  segmented_all_ops<bf16>(s, sd);
  segmented_all_ops<std::int32_t>(s, sd);
  segmented_all_ops<std::int64_t>(s, sd);
  segmented_all_ops<std::int8_t>(s, sd);
  segmented_all_ops<std::uint8_t>(s, sd);
}

// The even split's boundaries, in units of its tile (E elements of T): segments that begin inside a tile
// after another ends there and end one past the tile's last element or on it, segments ending on a tile's
// last element, one past it and one before it, a segment over several tiles (so several chunks: each chunk
// is a tile at this size), runs of empty segments, many of 1-3 elements (a thread each) and of 33-100 (a
// group each) inside one tile, and power-law lengths (Pareto, exponent 1.2, 8 to 4E elements).
template <class T>
std::vector<std::int64_t> split_lengths(const reduction::split_policy& p, std::uint64_t sd, std::int64_t first) {
  const std::int64_t E = reduction::split_tile_elems(p, sizeof(T));
  // The segments, with tiles on the 16-byte grid of an aligned input starting at 0 (8-byte elements with
  // first = 3: at 2, which shifts these cases by 2): [first, E - 2), [E - 2, E + 1), [E + 1, 2E - 2),
  // [2E - 2, 2E), [2E, 3E), [3E, 3E + 1), [3E + 1, 4E - 1), [4E - 1, 5E - 1), [5E - 1, 6E), ...
  std::vector<std::int64_t> l = {E - 2 - first, 3, E - 3, 2, E, 1, E - 2, E, E + 1, 0, 0, 3 * E + 5, 0};
  std::mt19937_64 rng(sd ^ 0x5eed);
  std::uniform_int_distribution<std::int64_t> tiny(0, 3), small(33, 100);
  for (int i = 0; i < 300; ++i) l.push_back(tiny(rng));
  for (int i = 0; i < 40; ++i) l.push_back(small(rng));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 60; ++i)
    l.push_back(std::min<std::int64_t>(4 * E, static_cast<std::int64_t>(8.0 * std::pow(1.0 - u(rng), -1.0 / 1.2))));
  l.push_back(0);
  return l;
}

template <class T>
void split_all_ops(const stream& s, std::uint64_t sd) {
  for (const reduction::split_policy& p : reduction::split_candidates)
    for (reduce_op op : all_ops) {
      if (!arith(reduction::dtype_of<T>) && (op == reduce_op::sum || op == reduce_op::prod)) continue;
      for (std::int64_t first : {std::int64_t{3}, std::int64_t{0}}) {
        check_segmented<T>(s, op, sd, reduction::name_of(p), split_lengths<T>(p, sd, first), first);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
}

TEST_P(ReduceSegmented, EvenSplitAtTileAndChunkBoundaries) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  split_all_ops<double>(s, sd);
  split_all_ops<float>(s, sd);
  split_all_ops<bf16>(s, sd);
  split_all_ops<std::int64_t>(s, sd);
  split_all_ops<std::uint8_t>(s, sd);
  // Every segment empty, and no segment's elements at all but the offsets' first value.
  check_segmented<float>(s, reduce_op::sum, sd, reduction::name_of(reduction::split_candidates[0]),
                         std::vector<std::int64_t>(700, 0));
  check_segmented<float>(s, reduce_op::argmax, sd, reduction::name_of(reduction::split_candidates[0]), {0, 0, 5, 0});
}

// Chunks of several tiles (more tiles than blocks): the open segment's per-thread partials carried from
// tile to tile, and segments over many chunks. The grid is one wave of resident blocks, so the input
// holds 1.5 waves of tiles; impersonated devices whose wave needs more than 8M elements to exceed are
// skipped with a message (their warp-size-dependent paths are the boundary test's).
TEST_P(ReduceSegmented, EvenSplitChunksOfSeveralTiles) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const reduction::split_policy& p = reduction::split_candidates[0];
  const archdb::plan plan = reduction::plan_segmented_reduce(s.device(), 1, 1, 4);
  ASSERT_GE(plan.all.size(), 1u);
  const std::int64_t grid = std::int64_t{plan.all[0].occ.blocks_per_sm} * s.device().sm_count;
  const std::int64_t E = reduction::split_tile_elems(p, 4);
  const std::int64_t total = (3 * grid / 2 + 1) * E;
  if (!GetParam().gpu && total > (std::int64_t{1} << 23))
    GTEST_SKIP() << "skipped: " << total << " elements to pass one wave of " << grid << " blocks on "
                 << s.device().name << " is too many to emulate";
  std::mt19937_64 rng(sd ^ 0xc4a2);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::int64_t> lengths;
  std::int64_t sum = 0;
  while (sum < total) {
    const std::int64_t l = u(rng) < 0.05 ? 0
                           : std::min<std::int64_t>(40 * E, static_cast<std::int64_t>(100.0 * std::pow(1.0 - u(rng), -1.0 / 1.1)));
    lengths.push_back(std::min(l, total - sum));
    sum += lengths.back();
  }
  const std::string name = reduction::name_of(p);
  check_segmented<float>(s, reduce_op::sum, sd, name, lengths);
  check_segmented<float>(s, reduce_op::argmax, sd, name, lengths);
  // Segments of one tile each, on the tiles (offsets from 0): every segment ends at its tile's last element.
  const std::vector<std::int64_t> tiles(static_cast<std::size_t>(total / E), E);
  check_segmented<float>(s, reduce_op::sum, sd, name, tiles, 0);
  check_segmented<float>(s, reduce_op::argmin, sd, name, tiles, 0);
}

// Offsets that break the non-decreasing rule give unspecified values (the caller's error) but must leave
// the stream's workspace as it was: a segment that seems to cross five chunks is published by three, so
// its ticket would stay at 3 unless the kernel clears the tickets itself. The next, valid call on the
// stream must be right.
TEST_P(ReduceSegmented, EvenSplitBadOffsetsLeaveTheStreamUsable) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const reduction::split_policy& p = reduction::split_candidates[0];
  const std::int64_t E = reduction::split_tile_elems(p, 4);
  const std::string name = reduction::name_of(p);
  reduce_options opt;
  opt.policy = name.c_str();
  const auto h = gen<float>(reduce_op::sum, static_cast<std::size_t>(6 * E), sd);
  auto in = upload_padded(s, h);
  device_buffer<std::int64_t> off;
  ASSERT_TRUE(off.allocate(s, 3));
  ASSERT_TRUE(off.upload(std::vector<std::int64_t>{0, 5 * E, 3 * E}));
  device_buffer<float> out;
  ASSERT_TRUE(out.allocate(s, 2));
  ASSERT_TRUE(segmented_reduce(s, reduce_op::sum, dtype::f32, in.data(), 2, off.data(), out.data(), opt));
  ASSERT_TRUE(synchronize(s));
  check_segmented<float>(s, reduce_op::sum, sd, name, {3 * E + 5, E, 7});
}

// A [d0, d1, d2] tensor with padded strides (rows of d2 + 3, planes of d1 * (d2 + 3) + 5): reduce
// along each axis; the output has its own padded strides and is poisoned, every element checked.
template <class T>
void check_axis(const stream& s, reduce_op op, int axis, std::int64_t d0, std::int64_t d1, std::int64_t d2,
                std::uint64_t sd) {
  SCOPED_TRACE(std::string(to_string(op)) + " " + reduction::to_string(reduction::dtype_of<T>) + " axis " +
               std::to_string(axis) + " shape " + std::to_string(d0) + "x" + std::to_string(d1) + "x" +
               std::to_string(d2));
  const std::int64_t st2 = 1, st1 = d2 + 3, st0 = d1 * st1 + 5;
  const auto h = gen<T>(op, static_cast<std::size_t>(d0 * st0 + 1), sd);
  auto in = upload_padded(s, h);
  tensor_view iv;
  iv.data = in.data();
  iv.type = reduction::dtype_of<T>;
  iv.rank = 3;
  const std::int64_t shape[3] = {d0, d1, d2}, stride[3] = {st0, st1, st2};
  for (int d = 0; d < 3; ++d) {
    iv.shape[d] = shape[d];
    iv.stride[d] = stride[d];
  }
  const bool arg = op == reduce_op::argmin || op == reduce_op::argmax;
  // Output [a, b] (the two remaining dims), row stride b + 2.
  std::int64_t a = 0, b = 0, ia = 0, ib = 0;
  for (int d = 0, o = 0; d < 3; ++d) {
    if (d == axis) continue;
    (o == 0 ? a : b) = shape[d];
    (o == 0 ? ia : ib) = stride[d];
    ++o;
  }
  const std::int64_t ob = b + 2;
  tensor_view ov;
  ov.type = arg ? dtype::i64 : reduction::dtype_of<T>;
  ov.rank = 2;
  ov.shape[0] = a;
  ov.shape[1] = b;
  ov.stride[0] = ob;
  ov.stride[1] = 1;
  const std::size_t out_n = static_cast<std::size_t>(a * ob);
  const auto run = [&](auto poison_value) {
    using Out = decltype(poison_value);
    device_buffer<Out> out;
    ASSERT_TRUE(out.allocate(s, out_n));
    ASSERT_TRUE(out.upload(std::vector<Out>(out_n, poison_value)));
    ov.data = out.data();
    const status st = reduce_axis(s, op, iv, axis, ov);
    ASSERT_TRUE(st) << st.to_string();
    ASSERT_TRUE(synchronize(s));
    std::vector<Out> r;
    ASSERT_TRUE(out.download(r));
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t j = 0; j < ob; ++j) {
        const Out g = r[static_cast<std::size_t>(i * ob + j)];
        if (j >= b) {
          ASSERT_TRUE(same(g, poison_value)) << "wrote into the output's padding";
          continue;
        }
        const T* x = h.data() + i * ia + j * ib;
        if (arg) {
          ASSERT_EQ(static_cast<std::int64_t>(g), ref_index(op, x, shape[axis], stride[axis])) << i << "," << j;
        } else if constexpr (std::is_same_v<Out, T>) {
          const T want = ref_value(op, x, shape[axis], stride[axis]);
          ASSERT_TRUE(same(g, want)) << i << "," << j << " got " << show(g) << " want " << show(want);
        }
      }
  };
  if (arg) {
    run(std::int64_t{-7});
  } else {
    run(poison<T>());
  }
}

TEST_P(ReduceSegmented, AlongEachAxisOfAStridedTensor) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int axis = 0; axis < 3; ++axis) {
    check_axis<float>(s, reduce_op::sum, axis, 3, 5, 257, sd);
    check_axis<bf16>(s, reduce_op::argmax, axis, 4, 33, 65, sd);
    check_axis<std::int8_t>(s, reduce_op::min, axis, 2, 7, 1025, sd);
    check_axis<std::int64_t>(s, reduce_op::prod, axis, 3, 31, 9, sd);
    check_axis<double>(s, reduce_op::argmin, axis, 1, 1, 33, sd);
    check_axis<fp16>(s, reduce_op::max, axis, 2, 64, 1, sd);
  }
  // An empty reduced axis (identities everywhere) and a reduced axis of length 1.
  check_axis<float>(s, reduce_op::prod, 2, 2, 3, 0, sd);
  check_axis<std::int32_t>(s, reduce_op::argmax, 1, 2, 1, 31, sd);
}

TEST_P(ReduceSegmented, BadArgumentsNameTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<float> buf;
  ASSERT_TRUE(buf.allocate(s, 64));
  device_buffer<std::int64_t> off;
  ASSERT_TRUE(off.allocate(s, 3));
  const auto expect = [](const status& st, errc code, const char* needle) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  expect(segmented_reduce(s, reduce_op::sum, dtype::f32, buf.data(), 2, nullptr, buf.data()), errc::invalid_argument,
         "offsets");
  expect(segmented_reduce(s, reduce_op::sum, dtype::f32, buf.data(), -1, off.data(), buf.data()),
         errc::invalid_argument, "segments = -1");
  expect(segmented_reduce(s, reduce_op::sum, dtype::f32, nullptr, 2, off.data(), buf.data()), errc::invalid_argument,
         "in:");
  expect(segmented_reduce(s, reduce_op::sum, dtype::f32, buf.data(), 2, off.data(), nullptr), errc::invalid_argument,
         "out:");
  expect(segmented_reduce(s, reduce_op::prod, dtype::i8, buf.data(), 2, off.data(), buf.data()), errc::unsupported,
         "type i8");
  tensor_view in;
  in.data = buf.data();
  in.rank = 2;
  in.shape[0] = 4;
  in.shape[1] = 8;
  in.stride[0] = 8;
  in.stride[1] = 1;
  tensor_view out;
  out.data = buf.data();
  out.rank = 1;
  out.shape[0] = 4;
  out.stride[0] = 1;
  expect(reduce_axis(s, reduce_op::sum, in, 2, out), errc::invalid_argument, "axis = 2");
  expect(reduce_axis(s, reduce_op::argmax, in, 1, out), errc::invalid_argument, "out.type");
  out.shape[0] = 5;
  expect(reduce_axis(s, reduce_op::sum, in, 1, out), errc::invalid_argument, "out.shape[0] = 5");
  out.shape[0] = 4;
  out.rank = 2;
  expect(reduce_axis(s, reduce_op::sum, in, 1, out), errc::invalid_argument, "out.rank");
  out.rank = 1;
  // A forced policy is never dropped: the strided path (axis 0 here: stride 8) has no candidates, and a
  // unit-stride axis accepts only its own candidates' names.
  {
    tensor_view out8 = out;
    out8.shape[0] = 8;
    reduce_options o;
    o.policy = "seg_b256_g32_u4";
    expect(reduce_axis(s, reduce_op::sum, in, 0, out8, o), errc::unsupported, "a strided axis");
    o.policy = "reduce_b256_i16_v4";
    expect(reduce_axis(s, reduce_op::sum, in, 1, out, o), errc::invalid_argument, "not a compiled candidate");
  }
  in.stride[1] = -1;
  expect(reduce_axis(s, reduce_op::sum, in, 1, out), errc::invalid_argument, "in.stride[1]");
  in.stride[1] = 1;
  in.rank = 5;
  expect(reduce_axis(s, reduce_op::sum, in, 1, out), errc::invalid_argument, "in.rank");
  in.rank = 2;
  in.data = nullptr;
  expect(reduce_axis(s, reduce_op::sum, in, 1, out), errc::invalid_argument, "in.data");
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceSegmented, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
