// libFuzzer target: the C API's reductions and row operations (pk_reduce, pk_reduce_axis,
// pk_segmented_reduce, pk_reduce_mean_var, pk_softmax, pk_log_softmax, pk_layer_norm, pk_rms_norm,
// pk_row_mean_var) with fuzzed shapes (huge and negative extents included), strides, dtypes, options and
// pointers (null, misaligned). Memory is always the target's own (fuzz_common.hpp); an accepted backed
// problem is checked against a CPU reference, a rejected call must leave every output untouched.
#include "fuzz_common.hpp"

#include <limits>
#include <random>
#include <set>

using namespace pk_fuzz;

namespace {

constexpr std::int32_t reduce_dtypes[] = {PK_DTYPE_F64, PK_DTYPE_F32, PK_DTYPE_F16, PK_DTYPE_BF16,
                                          PK_DTYPE_I32, PK_DTYPE_I64, PK_DTYPE_I8,  PK_DTYPE_U8};
constexpr std::int32_t float_dtypes[] = {PK_DTYPE_F64, PK_DTYPE_F32, PK_DTYPE_F16, PK_DTYPE_BF16};

template <std::size_t N>
std::int32_t pick_dtype(FuzzedDataProvider& f, const std::int32_t (&usual)[N]) {
  switch (f.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return f.ConsumeIntegralInRange<std::int32_t>(-2, 12);  // FP8, unknown values
    default: return usual[f.ConsumeIntegralInRange<std::size_t>(0, N - 1)];
  }
}

bool is_float(std::int32_t d) { return d == PK_DTYPE_F64 || d == PK_DTYPE_F32 || d == PK_DTYPE_F16 || d == PK_DTYPE_BF16; }

// Unit roundoff of the stored type (the result's final rounding).
double unit(std::int32_t d) {
  switch (d) {
    case PK_DTYPE_F64: return 0x1p-53;
    case PK_DTYPE_F32: return 0x1p-24;
    case PK_DTYPE_F16: return 0x1p-11;
    case PK_DTYPE_BF16: return 0x1p-8;
    default: return 0;
  }
}
// Unit roundoff of the accumulation (fp32 for 16-bit and fp32 inputs).
double accum_unit(std::int32_t d) { return d == PK_DTYPE_F64 ? 0x1p-53 : 0x1p-24; }
// The largest finite value of a floating type: references beyond it are not compared.
double largest(std::int32_t d) {
  switch (d) {
    case PK_DTYPE_F16: return 65504;
    case PK_DTYPE_BF16: case PK_DTYPE_F32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

// Small values, exactly representable in every dtype (unsigned ones for u8; +-1 and 0 for products so
// that they stay exact in any order).
void fill(const pk_tensor& t, const backing& b, std::uint32_t seed, bool product) {
  if (!b.buf) return;
  std::minstd_rand g(seed | 1);
  const std::int64_t count = b.hi - b.lo + 1;
  const std::int64_t first = -b.lo;  // index of the buffer's first element relative to t.data
  for (std::int64_t i = 0; i < count && b.elems > 0; ++i) {
    const int r = static_cast<int>(g() % 17);
    double v = t.dtype == PK_DTYPE_U8 ? r : r - 8;
    if (product) v = r < 2 ? 0 : (r % 2 ? 1 : -1);
    store(t.data, t.dtype, i - first, v);
  }
}

// Offsets in elements of every element of a view, in row-major index order.
std::vector<std::int64_t> offsets_of(const pk_tensor& t) {
  std::int64_t n = 1;
  for (std::int32_t k = 0; k < t.rank; ++k) n *= t.shape[k];
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(n));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(std::max(t.rank, 1)), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t off = 0;
    for (std::int32_t k = 0; k < t.rank; ++k) off += idx[k] * t.strides[k];
    out.push_back(off);
    for (std::int32_t k = t.rank - 1; k >= 0; --k) {
      if (++idx[k] < t.shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

// Bytes of `b`'s buffer outside the elements of `t` must not change (a write past an element).
void untouched_outside(const char* api, const pk_tensor& t, const backing& b) {
  if (!b.buf) return;
  const std::size_t eb = dtype_bytes(t.dtype);
  std::vector<bool> covered(b.buf->bytes, false);
  const auto* base = static_cast<const unsigned char*>(t.data);
  for (std::int64_t off : offsets_of(t))
    for (std::size_t j = 0; j < eb; ++j) covered[static_cast<std::size_t>(base + off * static_cast<std::int64_t>(eb) + j - b.buf->p)] = true;
  for (std::size_t i = 0; i < b.buf->bytes; ++i)
    if (!covered[i] && b.buf->p[i] != b.buf->shadow[i]) fail(api, "wrote byte " + std::to_string(i) + " outside the output's elements");
}

bool distinct(const pk_tensor& t) {
  const std::vector<std::int64_t> o = offsets_of(t);
  return std::set<std::int64_t>(o.begin(), o.end()).size() == o.size();
}

void close_to(const char* api, const std::string& what, double got, double want, double tol) {
  if (std::isnan(want) ? !std::isnan(got) : !(std::fabs(got - want) <= tol))
    fail(api, what + ": got " + std::to_string(got) + ", want " + std::to_string(want) + " (tolerance " + std::to_string(tol) + ")");
}

// The reference of one reduction over values `v` (in order); the result as the output dtype stores it.
double reference(pk_reduce_op op, std::int32_t d, const std::vector<double>& v) {
  auto lowest = [&] {
    switch (d) {
      case PK_DTYPE_I32: return double(std::numeric_limits<std::int32_t>::lowest());
      case PK_DTYPE_I64: return double(std::numeric_limits<std::int64_t>::lowest());
      case PK_DTYPE_I8: return double(std::numeric_limits<std::int8_t>::lowest());
      case PK_DTYPE_U8: return 0.0;
      default: return -double(INFINITY);
    }
  };
  auto highest = [&] {
    switch (d) {
      case PK_DTYPE_I32: return double(std::numeric_limits<std::int32_t>::max());
      case PK_DTYPE_I64: return double(std::numeric_limits<std::int64_t>::max());
      case PK_DTYPE_I8: return double(std::numeric_limits<std::int8_t>::max());
      case PK_DTYPE_U8: return 255.0;
      default: return double(INFINITY);
    }
  };
  switch (op) {
    case PK_REDUCE_SUM: { double s = 0; for (double x : v) s += x; return s; }
    case PK_REDUCE_PROD: { double p = 1; for (double x : v) p *= x; return p; }
    case PK_REDUCE_MIN: { double m = highest(); for (double x : v) m = std::min(m, x); return m; }
    case PK_REDUCE_MAX: { double m = lowest(); for (double x : v) m = std::max(m, x); return m; }
    case PK_REDUCE_ARGMIN: case PK_REDUCE_ARGMAX: {
      std::int64_t best = -1;
      for (std::size_t i = 0; i < v.size(); ++i)
        if (best < 0 || (op == PK_REDUCE_ARGMIN ? v[i] < v[best] : v[i] > v[best])) best = static_cast<std::int64_t>(i);
      return static_cast<double>(best);
    }
  }
  return 0;
}

double reduce_tolerance(pk_reduce_op op, std::int32_t d, double want) {
  if (op == PK_REDUCE_ARGMIN || op == PK_REDUCE_ARGMAX || !is_float(d)) return 0;
  return std::fabs(want) * unit(d);  // sums of small integers are exact in the accumulator; one final rounding
}

pk_reduce_op pick_op(FuzzedDataProvider& f) {
  // Not a pk_reduce_op: 6 and 7 (values outside the enumeration's range [0, 7] cannot be formed in C++
  // without undefined behaviour; tests/install/c_api passes such values from C).
  if (f.ConsumeIntegralInRange<int>(0, 31) == 0) return static_cast<pk_reduce_op>(f.ConsumeIntegralInRange<int>(6, 7));
  return static_cast<pk_reduce_op>(f.ConsumeIntegralInRange<int>(0, 5));
}

struct options_holder {
  pk_reduce_options o{};
  std::string policy;
  const pk_reduce_options* ptr = nullptr;
};
void pick_options(FuzzedDataProvider& f, options_holder& h) {
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: h.o.reproducible = 1; h.ptr = &h.o; break;
    case 1: h.policy = f.ConsumeRandomLengthString(24); h.o.policy = h.policy.c_str(); h.ptr = &h.o; break;
    case 2: h.ptr = &h.o; break;
    default: break;
  }
}

void device_wide(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_reduce";
  const pk_reduce_op op = pick_op(f);
  pk_tensor in{};
  in.dtype = pick_dtype(f, reduce_dtypes);
  in.rank = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-2, 10)
                                                      : f.ConsumeIntegralInRange<std::int32_t>(0, 3);
  for (std::int32_t k = 0; k < std::clamp(in.rank, 0, PK_MAX_RANK); ++k) in.shape[k] = extent(f, k == 0 ? 4000 : 24);
  if (in.rank >= 0 && in.rank <= PK_MAX_RANK) row_major(in, 0);
  const bool strided = f.ConsumeIntegralInRange<int>(0, 15) == 0;
  if (strided && in.rank > 0) in.strides[0] = f.ConsumeIntegralInRange<std::int64_t>(-4, 64);
  options_holder opt;
  pick_options(f, opt);
  backing bin = back(in, pick_placement(f));
  fill(in, bin, f.ConsumeIntegral<std::uint32_t>(), op == PK_REDUCE_PROD);

  const bool arg = op == PK_REDUCE_ARGMIN || op == PK_REDUCE_ARGMAX;
  pk_tensor out{};
  out.dtype = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? pick_dtype(f, reduce_dtypes) : (arg ? PK_DTYPE_I64 : in.dtype);
  out.rank = f.ConsumeIntegralInRange<int>(0, 3) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(0, 3) : 0;
  for (std::int32_t k = 0; k < out.rank; ++k) out.shape[k] = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? extent(f, 3) : 1;
  row_major(out, 0);
  backing bout = back(out, f.ConsumeIntegralInRange<int>(0, 31) == 0 ? placement::null : placement::aligned);
  if (bout.buf) bout.buf->snapshot();

  const pk_status st = pk_reduce(s, op, &in, &out, opt.ptr);
  check_status(api, st);
  const bool impossible = bin.what == backing::impossible || bout.what == backing::impossible;
  if (st != PK_SUCCESS) {
    if (bout.buf && !bout.buf->unchanged()) fail(api, "rejected, yet the output changed");
    return;
  }
  if (impossible) fail(api, "accepted a descriptor whose extents cannot exist (negative or beyond int64)");
  if (bin.elems > 0 && bin.null_data) fail(api, "accepted null data for a non-empty input");
  if (bout.elems != 1 || out.data == nullptr) fail(api, "accepted an output that is not one element");
  if (bin.misaligned) fail(api, "accepted input data that is not aligned to its element size");
  // Accepted: the input is contiguous (pk's rule), so the values are in index order.
  std::vector<double> v(static_cast<std::size_t>(bin.elems));
  for (std::int64_t i = 0; i < bin.elems; ++i) v[static_cast<std::size_t>(i)] = load(in.data, in.dtype, i);
  const double want = reference(op, in.dtype, v);
  if (is_float(in.dtype) && !arg && std::fabs(want) > largest(in.dtype)) return;
  close_to(api, "result", load(out.data, out.dtype, 0), want, reduce_tolerance(op, in.dtype, want));
}

// Strides for a view of `t`'s shape: row-major, padded, a permutation, zero (broadcast), or random.
void pick_strides(FuzzedDataProvider& f, pk_tensor& t, bool allow_negative) {
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: row_major(t, f.ConsumeIntegralInRange<std::int64_t>(1, 9)); break;
    case 1: {  // column-major
      std::int64_t s = 1;
      for (std::int32_t k = 0; k < t.rank; ++k) { t.strides[k] = s; s = wrap_mul(s, std::max<std::int64_t>(t.shape[k], 1)); }
      break;
    }
    case 2:
      for (std::int32_t k = 0; k < t.rank; ++k)
        t.strides[k] = allow_negative ? f.ConsumeIntegralInRange<std::int64_t>(-6, 40) : f.ConsumeIntegralInRange<std::int64_t>(0, 40);
      break;
    case 3:
      row_major(t, 0);
      if (t.rank > 0) t.strides[f.ConsumeIntegralInRange<std::int32_t>(0, t.rank - 1)] = f.ConsumeBool() ? 0 : extent(f, 1 << 20);
      break;
    case 4:  // one stride just below 2^62, whose offsets overflow int64 from index 2 on: valid only on an extent
             // of 1 or in an empty view, neither of which may form them
      row_major(t, 0);
      if (t.rank > 0)
        t.strides[f.ConsumeIntegralInRange<std::int32_t>(0, t.rank - 1)] =
            (std::int64_t{1} << 62) - f.ConsumeIntegralInRange<std::int64_t>(0, 1 << 20);
      break;
    default: row_major(t, 0); break;
  }
}

void along_axis(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_reduce_axis";
  const pk_reduce_op op = pick_op(f);
  const bool arg = op == PK_REDUCE_ARGMIN || op == PK_REDUCE_ARGMAX;
  pk_tensor in{};
  in.dtype = pick_dtype(f, reduce_dtypes);
  in.rank = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 9)
                                                      : f.ConsumeIntegralInRange<std::int32_t>(1, 4);
  for (std::int32_t k = 0; k < std::clamp(in.rank, 0, PK_MAX_RANK); ++k) in.shape[k] = extent(f, k == 0 ? 300 : 12);
  const std::int32_t axis = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-2, 9)
                                                                      : f.ConsumeIntegralInRange<std::int32_t>(0, std::max(in.rank - 1, 0));
  if (in.rank >= 0 && in.rank <= PK_MAX_RANK) pick_strides(f, in, true);
  options_holder opt;
  pick_options(f, opt);
  backing bin = back(in, pick_placement(f));
  fill(in, bin, f.ConsumeIntegral<std::uint32_t>(), op == PK_REDUCE_PROD);

  pk_tensor out{};
  out.dtype = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? pick_dtype(f, reduce_dtypes) : (arg ? PK_DTYPE_I64 : in.dtype);
  out.rank = std::max(in.rank - 1, 0);
  if (out.rank > PK_MAX_RANK) out.rank = PK_MAX_RANK;
  for (std::int32_t d = 0, o = 0; d < std::clamp(in.rank, 0, PK_MAX_RANK); ++d)
    if (d != axis && o < PK_MAX_RANK) out.shape[o++] = in.shape[d];
  if (f.ConsumeIntegralInRange<int>(0, 15) == 0 && out.rank > 0) out.shape[0] = extent(f, 8);
  if (f.ConsumeIntegralInRange<int>(0, 31) == 0) out.rank = f.ConsumeIntegralInRange<std::int32_t>(-1, 5);
  if (out.rank >= 0 && out.rank <= PK_MAX_RANK) pick_strides(f, out, true);
  backing bout = back(out, f.ConsumeIntegralInRange<int>(0, 31) == 0 ? placement::null : placement::aligned);
  if (bout.buf) bout.buf->snapshot();

  const pk_status st = pk_reduce_axis(s, op, &in, axis, &out, opt.ptr);
  check_status(api, st);
  if (st != PK_SUCCESS) {
    if (bout.buf && !bout.buf->unchanged()) fail(api, "rejected, yet the output changed");
    return;
  }
  if (bout.what == backing::impossible && bout.elems != 0) fail(api, "accepted an output whose extents cannot exist");
  if (bout.elems == 0) {
    if (bout.buf && !bout.buf->unchanged()) fail(api, "an empty output, yet memory changed");
    return;
  }
  if (bin.what == backing::impossible) fail(api, "accepted an input whose extents cannot exist");
  if (bin.misaligned || bout.misaligned) fail(api, "accepted data that is not aligned to its element size");
  if (!bout.buf || (!bin.buf && bin.elems > 0)) fail(api, "accepted null data");
  untouched_outside(api, out, bout);
  if (!distinct(out)) return;  // overlapping outputs: any of the colliding results may win
  // Reference: for each output index (row-major over in's dimensions without `axis`), the values along axis.
  const std::vector<std::int64_t> out_offsets = offsets_of(out);
  pk_tensor outer = in;  // in's view without `axis`
  outer.rank = in.rank - 1;
  for (std::int32_t d = 0, o = 0; d < in.rank; ++d)
    if (d != axis) { outer.shape[o] = in.shape[d]; outer.strides[o] = in.strides[d]; ++o; }
  // An empty axis reads nothing and its input's strides are unchecked: their offsets could overflow.
  const std::vector<std::int64_t> outer_offsets =
      in.shape[axis] == 0 ? std::vector<std::int64_t>(out_offsets.size(), 0) : offsets_of(outer);
  for (std::size_t i = 0; i < outer_offsets.size(); ++i) {
    std::vector<double> v(static_cast<std::size_t>(in.shape[axis]));
    for (std::int64_t j = 0; j < in.shape[axis]; ++j)
      v[static_cast<std::size_t>(j)] = load(in.data, in.dtype, outer_offsets[i] + j * in.strides[axis]);
    const double want = reference(op, in.dtype, v);
    if (is_float(in.dtype) && !arg && std::fabs(want) > largest(in.dtype)) continue;
    close_to(api, "output " + std::to_string(i), load(out.data, out.dtype, out_offsets[i]), want,
             reduce_tolerance(op, in.dtype, want));
  }
}

void segmented(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_segmented_reduce";
  const pk_reduce_op op = pick_op(f);
  const bool arg = op == PK_REDUCE_ARGMIN || op == PK_REDUCE_ARGMAX;
  pk_tensor in{};
  in.dtype = pick_dtype(f, reduce_dtypes);
  in.rank = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(0, 3) : 1;
  for (std::int32_t k = 0; k < in.rank; ++k) in.shape[k] = extent(f, 3000);
  row_major(in, 0);
  backing bin = back(in, pick_placement(f));
  fill(in, bin, f.ConsumeIntegral<std::uint32_t>(), op == PK_REDUCE_PROD);
  const std::int64_t n = bin.elems;

  pk_tensor out{};
  out.dtype = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? pick_dtype(f, reduce_dtypes) : (arg ? PK_DTYPE_I64 : in.dtype);
  out.rank = 1;
  out.shape[0] = extent(f, 40);
  row_major(out, 0);
  backing bout = back(out, f.ConsumeIntegralInRange<int>(0, 31) == 0 ? placement::null : placement::aligned);
  if (bout.buf) bout.buf->snapshot();
  const std::int64_t segments = out.shape[0];

  // Offsets: non-decreasing in [0, n] (the contract: the emulator need not check them; values outside
  // the input would be the caller's out-of-bounds access, not pk's).
  pk_tensor off{};
  off.dtype = PK_DTYPE_I64;
  off.rank = 1;
  off.shape[0] = segments >= 0 && segments < INT64_MAX ? segments + 1 : segments;
  if (f.ConsumeIntegralInRange<int>(0, 31) == 0) off.shape[0] = extent(f, 40);
  off.strides[0] = 1;
  backing boff = back(off, f.ConsumeIntegralInRange<int>(0, 31) == 0 ? placement::null : placement::aligned);
  if (boff.buf && boff.elems > 0) {
    std::vector<std::int64_t> cuts(static_cast<std::size_t>(boff.elems));
    for (auto& c : cuts) c = n > 0 ? f.ConsumeIntegralInRange<std::int64_t>(0, n) : 0;
    std::sort(cuts.begin(), cuts.end());
    if (bin.null_data || bin.what != backing::backed) std::fill(cuts.begin(), cuts.end(), 0);
    std::memcpy(off.data, cuts.data(), cuts.size() * sizeof(std::int64_t));
  }
  options_holder opt;
  pick_options(f, opt);

  const pk_status st = pk_segmented_reduce(s, op, &in, &off, &out, opt.ptr);
  check_status(api, st);
  if (st != PK_SUCCESS) {
    if (bout.buf && !bout.buf->unchanged()) fail(api, "rejected, yet the output changed");
    return;
  }
  if (segments <= 0) return;
  if (bin.what == backing::impossible || bout.what == backing::impossible) fail(api, "accepted extents that cannot exist");
  if (bin.misaligned) fail(api, "accepted input data that is not aligned to its element size");
  if (!bout.buf || !boff.buf || boff.elems != segments + 1) fail(api, "accepted a bad output or offsets descriptor");
  const auto* cuts = static_cast<const std::int64_t*>(off.data);
  for (std::int64_t i = 0; i < segments; ++i) {
    std::vector<double> v;
    for (std::int64_t j = cuts[i]; j < cuts[i + 1]; ++j) v.push_back(load(in.data, in.dtype, j));
    const double want = reference(op, in.dtype, v);
    if (is_float(in.dtype) && !arg && std::fabs(want) > largest(in.dtype)) continue;
    close_to(api, "segment " + std::to_string(i), load(out.data, out.dtype, i), want, reduce_tolerance(op, in.dtype, want));
  }
}

// Row operations: x [rows, cols], rows contiguous, any row stride; y like x (or x itself: in place).
enum class row_op { softmax, log_softmax, layer_norm, rms_norm, row_mean_var };

void rows(FuzzedDataProvider& f, pk_stream_t s, row_op which) {
  static const char* names[] = {"pk_softmax", "pk_log_softmax", "pk_layer_norm", "pk_rms_norm", "pk_row_mean_var"};
  const char* api = names[static_cast<int>(which)];
  pk_tensor x{};
  x.dtype = pick_dtype(f, float_dtypes);
  x.rank = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 9) : 2;
  const bool wide = f.ConsumeIntegralInRange<int>(0, 7) == 0;  // rows streamed by whole blocks
  for (std::int32_t k = 0; k < std::clamp(x.rank, 0, PK_MAX_RANK); ++k) x.shape[k] = extent(f, k == 0 ? 9 : wide ? 8192 : 300);
  if (x.rank >= 0 && x.rank <= PK_MAX_RANK) {
    row_major(x, f.ConsumeIntegralInRange<int>(0, 3) == 0 ? f.ConsumeIntegralInRange<std::int64_t>(1, 16) : 0);
    if (x.rank == 2 && f.ConsumeIntegralInRange<int>(0, 15) == 0) x.strides[f.ConsumeBool()] = extent(f, 64);
    // A row stride just below 2^62: valid for one row or rows of no columns only, which must not form its offsets.
    if (x.rank == 2 && f.ConsumeIntegralInRange<int>(0, 31) == 0)
      x.strides[0] = (std::int64_t{1} << 62) - f.ConsumeIntegralInRange<std::int64_t>(0, 1 << 20);
  }
  backing bx = back(x, pick_placement(f));
  fill(x, bx, f.ConsumeIntegral<std::uint32_t>(), false);
  if (bx.buf && which != row_op::row_mean_var) bx.buf->snapshot();

  const bool in_place = which != row_op::row_mean_var && f.ConsumeIntegralInRange<int>(0, 3) == 0;
  pk_tensor y = x;
  backing by;
  if (!in_place) {
    if (f.ConsumeIntegralInRange<int>(0, 15) == 0) y.dtype = pick_dtype(f, float_dtypes);
    if (y.rank == 2 && f.ConsumeIntegralInRange<int>(0, 15) == 0) y.shape[f.ConsumeBool()] = extent(f, 12);
    if (y.rank >= 0 && y.rank <= PK_MAX_RANK) row_major(y, f.ConsumeIntegralInRange<int>(0, 3) == 0 ? 3 : 0);
    by = back(y, f.ConsumeIntegralInRange<int>(0, 31) == 0 ? placement::null : placement::aligned);
    if (by.buf) by.buf->snapshot();
  }
  const std::int64_t rows = x.rank == 2 ? x.shape[0] : 0, cols = x.rank == 2 ? x.shape[1] : 0;
  const bool vec_ok = x.rank == 2 && rows >= 0 && cols >= 0;
  // weight, bias (layer_norm, rms_norm): cols elements of x's dtype; mean/rstd/var: rows values.
  pk_tensor w{}, b{}, mean{}, var{};
  backing bw, bb, bmean, bvar;
  std::unique_ptr<buffer> mean_f, rstd_f;
  double eps = 0;
  std::int32_t correction = 0;
  auto vector_of = [&](pk_tensor& t, backing& bk, std::int32_t dtype, std::int64_t n) {
    t.dtype = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? pick_dtype(f, float_dtypes) : dtype;
    t.rank = 1;
    t.shape[0] = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 300) : n;
    t.strides[0] = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? f.ConsumeIntegralInRange<std::int64_t>(-1, 3) : 1;
    bk = back(t, f.ConsumeIntegralInRange<int>(0, 31) == 0 ? placement::null : placement::aligned);
    if (bk.buf) bk.buf->snapshot();
  };
  if (which == row_op::layer_norm || which == row_op::rms_norm) {
    vector_of(w, bw, x.dtype, vec_ok ? cols : 1);
    fill(w, bw, f.ConsumeIntegral<std::uint32_t>(), false);
    if (bw.buf) bw.buf->snapshot();
    if (which == row_op::layer_norm && f.ConsumeBool()) {
      vector_of(b, bb, x.dtype, vec_ok ? cols : 1);
      fill(b, bb, f.ConsumeIntegral<std::uint32_t>(), false);
      if (bb.buf) bb.buf->snapshot();
    }
    static constexpr double eps_values[] = {0, 1e-5, 1e-6, 0.25};
    eps = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? f.ConsumeFloatingPoint<double>()
                                                   : eps_values[f.ConsumeIntegralInRange<int>(0, 3)];
    const std::size_t stat_bytes = static_cast<std::size_t>(vec_ok && rows <= 64 ? rows : 0) * sizeof(float);
    if (f.ConsumeBool()) { mean_f = std::make_unique<buffer>(stat_bytes); mean_f->snapshot(); }
    if (f.ConsumeBool()) { rstd_f = std::make_unique<buffer>(stat_bytes); rstd_f->snapshot(); }
    if (vec_ok && rows > 64) mean_f.reset(), rstd_f.reset();  // null rather than smaller than rows
  }
  if (which == row_op::row_mean_var) {
    const std::int32_t acc = x.dtype == PK_DTYPE_F64 ? PK_DTYPE_F64 : PK_DTYPE_F32;
    vector_of(mean, bmean, acc, vec_ok ? rows : 1);
    vector_of(var, bvar, acc, vec_ok ? rows : 1);
    correction = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? f.ConsumeIntegral<std::int32_t>() : f.ConsumeIntegralInRange<int>(0, 1);
  }

  if (std::getenv("PK_FUZZ_TRACE")) std::fprintf(stderr, "%s (in place %d, eps %g)\n", api, in_place, eps);
  trace("x", x);
  trace("y", y);
  trace("weight", w);
  float* mean_p = mean_f ? reinterpret_cast<float*>(mean_f->p) : nullptr;
  float* rstd_p = rstd_f ? reinterpret_cast<float*>(rstd_f->p) : nullptr;
  pk_status st = PK_SUCCESS;
  switch (which) {
    case row_op::softmax: st = pk_softmax(s, &x, &y); break;
    case row_op::log_softmax: st = pk_log_softmax(s, &x, &y); break;
    case row_op::layer_norm: st = pk_layer_norm(s, &x, &y, &w, bb.buf || b.rank ? &b : nullptr, eps, mean_p, rstd_p); break;
    case row_op::rms_norm: st = pk_rms_norm(s, &x, &y, &w, eps, rstd_p); break;
    case row_op::row_mean_var: st = pk_row_mean_var(s, &x, &mean, &var, correction); break;
  }
  check_status(api, st);
  if (st != PK_SUCCESS) {
    for (const buffer* o : {by.buf.get(), bmean.buf.get(), bvar.buf.get(), mean_f.get(), rstd_f.get(),
                            in_place ? bx.buf.get() : nullptr})
      if (o && !o->unchanged()) fail(api, "rejected, yet an output changed");
    return;
  }
  if (bx.what == backing::impossible) fail(api, "accepted x whose extents cannot exist");
  if (rows == 0 || cols == 0 || x.rank != 2) return;
  if (bx.null_data) fail(api, "accepted null x");
  if (bx.misaligned) fail(api, "accepted x not aligned to its element size");
  if (which == row_op::layer_norm || which == row_op::rms_norm) {
    if (std::isnan(eps) || eps < 0) fail(api, "accepted eps = " + std::to_string(eps) + " (must be >= 0)");
    if (eps > 1) return;  // no reference for extreme eps: only the absence of errors is checked
  }
  if (which != row_op::row_mean_var) {
    if (!in_place && !by.buf) fail(api, "accepted null y");
    // Rows of y that overlap (a row stride below cols) have no single right answer.
    if (rows > 1 && std::llabs(y.strides[0]) < cols) return;
    if (rows > 1 && std::llabs(x.strides[0]) < cols && in_place) return;
  }
  // Reference per row, from x's values before the call (the snapshot when in place).
  const double u = unit(x.dtype), au = accum_unit(x.dtype) * static_cast<double>(cols) * 4;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> v(static_cast<std::size_t>(cols));
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t off = r * (rows > 1 ? x.strides[0] : 0) + c;
      if (in_place) {
        pk_tensor before = x;
        before.data = bx.buf->shadow.data() + (static_cast<unsigned char*>(x.data) - bx.buf->p);
        v[static_cast<std::size_t>(c)] = load(before.data, x.dtype, off);
      } else {
        v[static_cast<std::size_t>(c)] = load(x.data, x.dtype, off);
      }
    }
    double mx = -INFINITY, m = 0, m2 = 0;
    for (double t : v) { mx = std::max(mx, t); m += t; }
    m /= static_cast<double>(cols);
    for (double t : v) m2 += (t - m) * (t - m);
    double se = 0;
    for (double t : v) se += std::exp(t - mx);
    auto y_at = [&](std::int64_t c) { return load(y.data, y.dtype, r * (rows > 1 ? y.strides[0] : 0) + c); };
    const std::string where = "row " + std::to_string(r) + " col ";
    switch (which) {
      case row_op::softmax:
        for (std::int64_t c = 0; c < cols; ++c) {
          const double want = std::exp(v[c] - mx) / se;
          // f16 results below its normal range keep an absolute spacing of 2^-24.
          close_to(api, where + std::to_string(c), y_at(c), want, want * (2 * u + au) + (y.dtype == PK_DTYPE_F16 ? 0x1p-24 : 0));
        }
        break;
      case row_op::log_softmax:
        for (std::int64_t c = 0; c < cols; ++c) {
          const double want = v[c] - mx - std::log(se);
          close_to(api, where + std::to_string(c), y_at(c), want, (std::fabs(want) + 1) * (2 * u + au));
        }
        break;
      case row_op::layer_norm:
      case row_op::rms_norm: {
        const bool layer = which == row_op::layer_norm;
        double ms = 0;
        for (double t : v) ms += t * t;
        ms /= static_cast<double>(cols);
        const double rstd = layer ? 1 / std::sqrt(m2 / static_cast<double>(cols) + eps) : 1 / std::sqrt(ms + eps);
        if (!std::isfinite(rstd)) break;  // a constant row with eps = 0: special values, see norm.hpp
        for (std::int64_t c = 0; c < cols; ++c) {
          const double wc = load(w.data, w.dtype, c), bc = bb.buf ? load(b.data, b.dtype, c) : 0;
          const double want = (layer ? (v[c] - m) : v[c]) * rstd * wc + bc;
          // |x * rstd| <= sqrt(cols): the fp32 error of the normalized value scales with it.
          close_to(api, where + std::to_string(c), y_at(c), want,
                   (std::fabs(want) + 1) * 2 * u + 8 * (std::fabs(wc) + 1) * au * std::sqrt(double(cols)));
        }
        if (layer && mean_p) close_to(api, where + "mean", mean_p[r], m, (std::fabs(m) + 1) * 1e-5);
        if (rstd_p) close_to(api, where + "rstd", rstd_p[r], rstd, rstd * 1e-4);
        break;
      }
      case row_op::row_mean_var: {
        if (bmean.misaligned || bvar.misaligned || !bmean.buf || !bvar.buf) fail(api, "accepted bad mean/var");
        close_to(api, where + "mean", load(mean.data, mean.dtype, r), m, (std::fabs(m) + 1) * 1e-5);
        if (correction < 0) fail(api, "accepted a negative correction");
        const double want = cols > correction ? m2 / static_cast<double>(cols - correction) : NAN;
        close_to(api, where + "var", load(var.data, var.dtype, r), want, (std::fabs(want) + 1) * 1e-4);
        break;
      }
    }
  }
}

void mean_var(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_reduce_mean_var";
  pk_tensor in{};
  in.dtype = pick_dtype(f, reduce_dtypes);
  in.rank = f.ConsumeIntegralInRange<std::int32_t>(0, 2);
  for (std::int32_t k = 0; k < in.rank; ++k) in.shape[k] = extent(f, 3000);
  row_major(in, 0);
  backing bin = back(in, pick_placement(f));
  fill(in, bin, f.ConsumeIntegral<std::uint32_t>(), false);
  const std::int32_t acc = in.dtype == PK_DTYPE_F64 ? PK_DTYPE_F64 : PK_DTYPE_F32;
  pk_tensor mean{}, var{};
  mean.dtype = var.dtype = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? pick_dtype(f, float_dtypes) : acc;
  backing bm = back(mean, placement::aligned), bv = back(var, placement::aligned);
  if (bm.buf) bm.buf->snapshot();
  if (bv.buf) bv.buf->snapshot();
  const std::int32_t correction = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? f.ConsumeIntegral<std::int32_t>() : f.ConsumeIntegralInRange<int>(0, 1);
  const pk_status st = pk_reduce_mean_var(s, &in, &mean, &var, correction);
  check_status(api, st);
  if (st != PK_SUCCESS) {
    if ((bm.buf && !bm.buf->unchanged()) || (bv.buf && !bv.buf->unchanged())) fail(api, "rejected, yet an output changed");
    return;
  }
  if (bin.what == backing::impossible) fail(api, "accepted extents that cannot exist");
  if (bin.elems > 0 && bin.null_data) fail(api, "accepted null data");
  if (bin.misaligned) fail(api, "accepted input data that is not aligned to its element size");
  if (correction < 0) fail(api, "accepted a negative correction");
  const std::int64_t n = bin.elems;
  double m = 0, m2 = 0;
  for (std::int64_t i = 0; i < n; ++i) m += load(in.data, in.dtype, i);
  m = n ? m / static_cast<double>(n) : NAN;
  for (std::int64_t i = 0; i < n; ++i) m2 += (load(in.data, in.dtype, i) - m) * (load(in.data, in.dtype, i) - m);
  close_to(api, "mean", load(mean.data, mean.dtype, 0), m, (std::fabs(m) + 1) * 1e-5);
  const double want = n > correction ? m2 / static_cast<double>(n - correction) : NAN;
  close_to(api, "var", load(var.data, var.dtype, 0), want, (std::fabs(want) + 1) * 1e-4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider f(data, size);
  pk_stream_t s = stream(f.ConsumeIntegralInRange<int>(0, 1));
  switch (f.ConsumeIntegralInRange<int>(0, 8)) {
    case 0: device_wide(f, s); break;
    case 1: along_axis(f, s); break;
    case 2: segmented(f, s); break;
    case 3: mean_var(f, s); break;
    case 4: rows(f, s, row_op::softmax); break;
    case 5: rows(f, s, row_op::log_softmax); break;
    case 6: rows(f, s, row_op::layer_norm); break;
    case 7: rows(f, s, row_op::rms_norm); break;
    default: rows(f, s, row_op::row_mean_var); break;
  }
  return 0;
}
