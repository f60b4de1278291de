// Limits of every reduction entry point: extents whose products overflow int64, strided views whose
// largest byte offset does not fit the address space, and counts whose byte size does not. Each must
// return invalid_argument naming the argument, and write nothing (outputs are poisoned and checked).
// Also the one `void* out` of pk::reduce: exactly one value of the input type (sum/prod/min/max) or
// one int64 index (argmin/argmax) is written there, nothing around it.
#include "reduce_test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace pk::test {
namespace {
using namespace red;

class ReduceLimits : public ::testing::TestWithParam<backend_param> {};

constexpr std::int64_t two_pow(int k) { return std::int64_t{1} << k; }

void expect_invalid(const status& st, const char* needle) {
  EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find(needle), std::string::npos) << "message should name '" << needle << "': " << st.message();
}

//! A small poisoned buffer: the "memory" behind every oversized view below. Nothing may be written.
struct poisoned {
  device_buffer<float> buf;
  explicit poisoned(const stream& s) {
    EXPECT_TRUE(buf.allocate(s, 64));
    EXPECT_TRUE(buf.upload(std::vector<float>(64, poison<float>())));
  }
  void expect_untouched(const stream& s) {
    ASSERT_TRUE(synchronize(s));
    std::vector<float> got;
    ASSERT_TRUE(buf.download(got));
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(is_nan(got[i])) << "element " << i << " was written";
  }
};

//! An f32 view of `data` with these extents and strides (rank = their count).
tensor_view f32_view(float* data, std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> stride) {
  tensor_view t;
  t.data = data;
  t.type = dtype::f32;
  t.rank = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape);
  std::copy(stride.begin(), stride.end(), t.stride);
  return t;
}

TEST_P(ReduceLimits, DeviceWideCountsWhoseBytesOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned in(s), out(s);
  // 2^62 f32 elements are 2^64 bytes; 2^61 + 1 f64 elements too.
  expect_invalid(reduce_sum<float>(s, in.buf.data(), two_pow(62), out.buf.data()), "n = ");
  expect_invalid(reduce(s, reduce_op::max, dtype::f64, in.buf.data(), two_pow(61) + 1, out.buf.data()), "n = ");
  expect_invalid(reduce(s, reduce_op::argmax, dtype::bf16, in.buf.data(), INT64_MAX, out.buf.data()), "n = ");
  reduce_options o;
  o.reproducible = true;
  expect_invalid(reduce(s, reduce_op::sum, dtype::f32, in.buf.data(), two_pow(62), out.buf.data(), o), "n = ");
  expect_invalid(reduce_mean_var(s, dtype::f64, in.buf.data(), two_pow(61) + 1, out.buf.data(), out.buf.data() + 2),
                 "n = ");
  out.expect_untouched(s);
}

TEST_P(ReduceLimits, AxisShapesWhoseProductsOrOffsetsOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned in(s), out(s);
  // [2^32, 2^32]: 2^64 elements (a wrapped product is 0).
  tensor_view v = f32_view(in.buf.data(), {two_pow(32), two_pow(32)}, {two_pow(32), 1});
  tensor_view o = f32_view(out.buf.data(), {two_pow(32)}, {1});
  expect_invalid(reduce_axis(s, reduce_op::sum, v, 1, o), "in.shape");
  // [2^61 + 1, 8] wraps to 8 elements.
  v.shape[0] = two_pow(61) + 1;
  v.shape[1] = 8;
  v.stride[0] = 8;
  o.shape[0] = v.shape[0];
  expect_invalid(reduce_axis(s, reduce_op::sum, v, 1, o), "in.shape");
  // Few elements, far apart: the largest offset (2^62 elements = 2^64 bytes) does not fit.
  v.shape[0] = 2;
  v.shape[1] = 2;
  v.stride[0] = two_pow(62);
  v.stride[1] = 1;
  o.shape[0] = 2;
  expect_invalid(reduce_axis(s, reduce_op::max, v, 1, o), "in.stride[0]");
  // (shape - 1) * stride itself overflows.
  v.shape[0] = 3;
  v.stride[0] = INT64_MAX / 2 + 1;
  o.shape[0] = 3;
  expect_invalid(reduce_axis(s, reduce_op::max, v, 1, o), "in.stride[0]");
  // The output view's offsets too.
  v.shape[0] = 2;
  v.stride[0] = 2;
  o.shape[0] = 2;
  o.stride[0] = two_pow(62);
  expect_invalid(reduce_axis(s, reduce_op::sum, v, 1, o), "out.stride[0]");
  out.expect_untouched(s);
}

// An empty reduced axis reads nothing, so the input's strides are not checked and may be anything; each
// output is the operation's identity. Outer strides whose offsets overflow int64 (7 * the stride below)
// must not reach the kernels' offset arithmetic (the sanitized build reports it).
TEST_P(ReduceLimits, EmptyAxisWithOuterStridesWhoseOffsetsOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned in(s), out(s);
  constexpr std::int64_t outputs = 9;
  const tensor_view v = f32_view(in.buf.data(), {outputs, 0}, {INT64_MAX / 6, 1});
  const tensor_view o = f32_view(out.buf.data(), {outputs}, {1});
  for (const auto& [op, identity] : {std::pair{reduce_op::sum, 0.0f}, std::pair{reduce_op::prod, 1.0f}}) {
    ASSERT_TRUE(out.buf.upload(std::vector<float>(64, poison<float>())));
    const status st = reduce_axis(s, op, v, 1, o);
    ASSERT_TRUE(st) << st.to_string();
    ASSERT_TRUE(synchronize(s));
    std::vector<float> got;
    ASSERT_TRUE(out.buf.download(got));
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
      if (i < outputs) EXPECT_EQ(got[static_cast<std::size_t>(i)], identity) << "output " << i;
      else EXPECT_TRUE(is_nan(got[static_cast<std::size_t>(i)])) << "element " << i << " was written";
    }
  }
}

TEST_P(ReduceLimits, SegmentCountsWhoseOffsetsOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned in(s), out(s);
  device_buffer<std::int64_t> offsets;
  ASSERT_TRUE(offsets.allocate(s, 4));
  ASSERT_TRUE(offsets.upload({0, 1, 2, 3}));
  // segments + 1 int64 offsets are more than 2^63 bytes.
  expect_invalid(segmented_reduce(s, reduce_op::sum, dtype::f32, in.buf.data(), INT64_MAX, offsets.data(),
                                  out.buf.data()),
                 "segments = ");
  expect_invalid(segmented_reduce(s, reduce_op::argmin, dtype::f32, in.buf.data(), two_pow(60), offsets.data(),
                                  out.buf.data()),
                 "segments = ");
  out.expect_untouched(s);
}

TEST_P(ReduceLimits, RowExtentsWhoseProductsOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned x(s), y(s);
  rows_desc r{dtype::f32, x.buf.data(), y.buf.data(), two_pow(40), two_pow(30)};  // 2^70 elements
  expect_invalid(softmax(s, r), "rows.rows");
  expect_invalid(log_softmax(s, r), "rows.rows");
  norm_args a;
  a.rows = r;
  a.weight = x.buf.data();
  expect_invalid(layer_norm(s, a), "rows.rows");
  expect_invalid(rms_norm(s, a), "rows.rows");
  expect_invalid(row_mean_var(s, r, y.buf.data(), y.buf.data() + 1), "rows.rows");
  // A row stride whose (rows - 1) * stride fits int64 elements but not bytes.
  rows_desc st{dtype::f64, x.buf.data(), y.buf.data(), 3, 2, two_pow(61), 2};
  expect_invalid(softmax(s, st), "rows.x_row_stride");
  st.x_row_stride = 2;
  st.y_row_stride = two_pow(61);
  expect_invalid(softmax(s, st), "rows.y_row_stride");
  // Row outputs: rows fp32/fp64 values of mean and variance (cols = 0 still writes them).
  rows_desc empty_cols{dtype::f64, x.buf.data(), nullptr, two_pow(61), 0};
  expect_invalid(row_mean_var(s, empty_cols, y.buf.data(), y.buf.data() + 1), "rows.rows");
  y.expect_untouched(s);
  x.expect_untouched(s);
}

// Rows of no columns read no element, so their strides are not checked: row_mean_var still writes every
// row's mean (NaN) and variance (NaN), and a stride whose row offsets overflow int64 must not reach the
// offset arithmetic of the launch or the kernels (the sanitized build reports it).
TEST_P(ReduceLimits, EmptyRowsWithStridesWhoseOffsetsOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  // A finite poison: the results are NaN, so a NaN poison would not show that they were written.
  constexpr float fill = 12345.0f;
  device_buffer<float> out;
  ASSERT_TRUE(out.allocate(s, 64));
  ASSERT_TRUE(out.upload(std::vector<float>(64, fill)));
  constexpr std::int64_t rows = 8;
  rows_desc r{dtype::f32, nullptr, nullptr, rows, 0, two_pow(62)};
  const status st = row_mean_var(s, r, out.data(), out.data() + rows);
  ASSERT_TRUE(st) << st.to_string();
  ASSERT_TRUE(synchronize(s));
  std::vector<float> got;
  ASSERT_TRUE(out.download(got));
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (i < 2 * rows) EXPECT_TRUE(is_nan(got[i])) << (i < rows ? "mean " : "var ") << i % rows << ": " << got[i];
    else EXPECT_EQ(got[i], fill) << "element " << i << " was written";
  }
}

// One row: its stride is never used, so it is not checked, and one whose byte size overflows int64 must
// not reach the launch's arithmetic (the sanitized build reports it). The row is still computed: softmax of
// 0, 0.5, .., 3.5 against the double reference.
TEST_P(ReduceLimits, OneRowWithAStrideWhoseBytesOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  constexpr int cols = 8;
  std::vector<float> h(cols);
  for (int j = 0; j < cols; ++j) h[static_cast<std::size_t>(j)] = 0.5f * static_cast<float>(j);
  device_buffer<float> x, y;
  ASSERT_TRUE(x.allocate(s, cols));
  ASSERT_TRUE(y.allocate(s, cols));
  ASSERT_TRUE(x.upload(h));
  ASSERT_TRUE(y.upload(std::vector<float>(cols, poison<float>())));
  const rows_desc r{dtype::f32, x.data(), y.data(), 1, cols, two_pow(62), two_pow(62)};
  const status st = softmax(s, r);
  ASSERT_TRUE(st) << st.to_string();
  ASSERT_TRUE(synchronize(s));
  std::vector<float> got;
  ASSERT_TRUE(y.download(got));
  double sum = 0;
  for (int j = 0; j < cols; ++j) sum += std::exp(0.5 * j - 3.5);
  for (int j = 0; j < cols; ++j) {
    const double want = std::exp(0.5 * j - 3.5) / sum;
    // test_norm's softmax rule: ref * ((n + 8 + |x - max|) * u + u_out), fp32 accumulation and output.
    const double tol = want * ((cols + 8 + (3.5 - 0.5 * j)) * 0x1p-24 + 0x1p-24);
    EXPECT_NEAR(got[static_cast<std::size_t>(j)], want, tol) << "column " << j;
  }
}

//! pk::reduce's `out`: exactly sizeof(T) bytes for a value, 8 for an index, nothing around them.
template <class T>
void check_out_bytes(const stream& s, reduce_op op, std::uint64_t sd) {
  SCOPED_TRACE(std::string(to_string(op)) + " " + reduction::to_string(reduction::dtype_of<T>));
  const auto h = gen<T>(op, 1001, sd);
  auto in = upload_padded(s, h);
  constexpr std::uint8_t fill = 0xA5;
  device_buffer<std::uint8_t> out;
  ASSERT_TRUE(out.allocate(s, 32));
  ASSERT_TRUE(out.upload(std::vector<std::uint8_t>(32, fill)));
  const std::size_t at = 8;  // aligned for every result type
  ASSERT_TRUE(reduce(s, op, reduction::dtype_of<T>, in.data(), 1001, out.data() + at));
  ASSERT_TRUE(synchronize(s));
  std::vector<std::uint8_t> got;
  ASSERT_TRUE(out.download(got));
  const bool index = op == reduce_op::argmin || op == reduce_op::argmax;
  const std::size_t bytes = index ? sizeof(std::int64_t) : sizeof(T);
  for (std::size_t i = 0; i < got.size(); ++i)
    if (i < at || i >= at + bytes) ASSERT_EQ(got[i], fill) << "byte " << i << " outside the result was written";
  if (index) {
    std::int64_t idx = 0;
    std::memcpy(&idx, got.data() + at, sizeof idx);
    EXPECT_EQ(idx, ref_index(op, h.data(), 1001));
  } else {
    T v;
    std::memcpy(&v, got.data() + at, sizeof v);
    EXPECT_TRUE(same(v, ref_value(op, h.data(), 1001))) << show(v);
  }
}

TEST_P(ReduceLimits, OutReceivesOneValueOfTheInputTypeOrOneInt64Index) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  check_out_bytes<std::uint8_t>(s, reduce_op::max, sd);
  check_out_bytes<std::uint8_t>(s, reduce_op::argmax, sd);
  check_out_bytes<fp16>(s, reduce_op::sum, sd);
  check_out_bytes<bf16>(s, reduce_op::min, sd);
  check_out_bytes<std::int32_t>(s, reduce_op::prod, sd);
  check_out_bytes<float>(s, reduce_op::argmin, sd);
  check_out_bytes<double>(s, reduce_op::sum, sd);
}

// Found by tests/fuzz/fuzz_reduce (an i64 input one byte off: the segment kernel loaded misaligned
// elements): every data pointer must be aligned to its element size, or the call is invalid_argument
// naming the argument, and nothing is written.
TEST_P(ReduceLimits, PointersNotAlignedToTheirElementSize) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned in(s), out(s);
  const auto* in_bytes = reinterpret_cast<const unsigned char*>(in.buf.data());
  auto* out_bytes = reinterpret_cast<unsigned char*>(out.buf.data());
  const void* in1 = in_bytes + 1;  // one byte off a 256-byte aligned allocation
  void* out1 = out_bytes + 1;
  void* out4 = out_bytes + 4;  // aligned for f32, not for f64 or int64
  expect_invalid(reduce(s, reduce_op::sum, dtype::f32, in1, 8, out.buf.data()), "reduce: in");
  expect_invalid(reduce(s, reduce_op::max, dtype::bf16, in1, 8, out.buf.data()), "reduce: in");
  expect_invalid(reduce(s, reduce_op::sum, dtype::f32, in.buf.data(), 8, out1), "reduce: out");
  expect_invalid(reduce(s, reduce_op::argmax, dtype::f32, in.buf.data(), 8, out4), "reduce: out");
  expect_invalid(reduce_mean_var(s, dtype::f64, in1, 4, out.buf.data(), out_bytes + 16), "reduce_mean_var: in");
  expect_invalid(reduce_mean_var(s, dtype::f64, in.buf.data(), 4, out4, out_bytes + 16), "reduce_mean_var: mean");
  device_buffer<std::int64_t> offsets;
  ASSERT_TRUE(offsets.allocate(s, 3));
  ASSERT_TRUE(offsets.upload({0, 2, 4}));
  expect_invalid(segmented_reduce(s, reduce_op::sum, dtype::i64, in1, 2, offsets.data(), out.buf.data()),
                 "segmented_reduce: in");
  expect_invalid(segmented_reduce(s, reduce_op::sum, dtype::f32, in.buf.data(), 2,
                                  reinterpret_cast<const std::int64_t*>(reinterpret_cast<const unsigned char*>(offsets.data()) + 4),
                                  out.buf.data()),
                 "segmented_reduce: offsets");
  expect_invalid(segmented_reduce(s, reduce_op::argmin, dtype::f32, in.buf.data(), 2, offsets.data(), out4),
                 "segmented_reduce: out");
  tensor_view v = pk::contiguous(in1, dtype::f32, {2, 3});
  tensor_view o = pk::contiguous(out.buf.data(), dtype::f32, {2});
  expect_invalid(reduce_axis(s, reduce_op::sum, v, 1, o), "reduce_axis: in.data");
  v.data = in.buf.data();
  o.data = out1;
  expect_invalid(reduce_axis(s, reduce_op::sum, v, 1, o), "reduce_axis: out.data");
  rows_desc r{dtype::f32, in1, out.buf.data(), 2, 3};
  expect_invalid(softmax(s, r), "rows.x");
  r.x = in.buf.data();
  r.y = out1;
  expect_invalid(log_softmax(s, r), "rows.y");
  norm_args a;
  a.rows = rows_desc{dtype::f32, in.buf.data(), out.buf.data(), 2, 3};
  a.weight = in1;
  expect_invalid(layer_norm(s, a), "weight");
  a.weight = in.buf.data();
  a.rstd = reinterpret_cast<float*>(out_bytes + 2);
  expect_invalid(rms_norm(s, a), "rstd");
  expect_invalid(row_mean_var(s, rows_desc{dtype::f64, in.buf.data(), nullptr, 2, 3}, out4, out_bytes + 16),
                 "row_mean_var: mean");
  out.expect_untouched(s);
}

// Found by tests/fuzz/fuzz_reduce: any negative row stride was read as -1 (cols), so rows that the
// caller laid out elsewhere were read as contiguous. Only -1 stands for cols.
TEST_P(ReduceLimits, NegativeRowStridesOtherThanMinusOne) {
  PK_TEST_STREAM(GetParam(), s);
  poisoned x(s), y(s);
  rows_desc r{dtype::f32, x.buf.data(), y.buf.data(), 2, 8, -2, -1};
  expect_invalid(softmax(s, r), "rows.x_row_stride");
  r.x_row_stride = 8;
  r.y_row_stride = INT64_MIN;
  expect_invalid(log_softmax(s, r), "rows.y_row_stride");
  norm_args a;
  a.rows = rows_desc{dtype::f32, x.buf.data(), y.buf.data(), 2, 8, -9, 8};
  a.weight = x.buf.data();
  expect_invalid(rms_norm(s, a), "rows.x_row_stride");
  expect_invalid(row_mean_var(s, rows_desc{dtype::f64, x.buf.data(), nullptr, 2, 4, -4}, y.buf.data(), y.buf.data() + 2),
                 "rows.x_row_stride");
  y.expect_untouched(s);
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceLimits, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
