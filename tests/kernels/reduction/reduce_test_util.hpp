// Shared helpers of the reduction tests: typed generators whose reductions are exact, references in
// double / modular int64, comparisons, and device round trips with poisoned outputs.
#pragma once
#include "../../common/backends.hpp"

#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace pk::test::red {

using reduction::dtype;

template <class T>
inline constexpr bool is_float_v = numeric_traits<T>::is_floating;

template <class T>
double to_double(T x) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, fp16>) {
    return static_cast<double>(static_cast<float>(x));
  } else {
    return static_cast<double>(x);
  }
}
template <class T>
T from_double(double d) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, fp16>) {
    return T(static_cast<float>(d));
  } else {
    return static_cast<T>(d);
  }
}
template <class T>
bool is_nan(T x) {
  if constexpr (is_float_v<T>) {
    return std::isnan(to_double(x));
  } else {
    return false;
  }
}
//! Same value: both NaN, or equal bits (so +0 and -0 differ).
template <class T>
bool same(T a, T b) {
  if (is_nan(a) && is_nan(b)) return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
template <class T>
std::string show(T x) {
  if constexpr (is_float_v<T>) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", to_double(x));
    return buf;
  } else {
    return std::to_string(static_cast<long long>(x));
  }
}

//! A poison value for outputs of type T (NaN for floats, a marker for integers).
template <class T>
T poison() {
  if constexpr (is_float_v<T>) {
    return numeric_traits<T>::quiet_nan();
  } else {
    return static_cast<T>(0x5A);
  }
}

//! Inputs for `op` whose reduction is exact in every order:
//!  sum:  floats k/16, k in [-8, 8] \ {0} (partial sums are multiples of 2^-4 below 2^20: exact in
//!        fp32; fp16 inputs are exact too); integers uniform over the type (sums wrap modulo 2^64).
//!  prod: floats +-1 with at most 8 factors of 2 or 1/2 (the product stays in every type's range);
//!        integers uniform (products wrap).
//!  min/max/arg*: values from a small set (many ties: the first index must win).
template <class T>
std::vector<T> gen(reduce_op op, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  if (op == reduce_op::sum || op == reduce_op::prod) {
    if constexpr (is_float_v<T>) {
      if (op == reduce_op::sum) {
        std::uniform_int_distribution<int> d(-8, 7);
        for (auto& x : v) {
          int k = d(rng);
          if (k >= 0) ++k;
          x = from_double<T>(k / 16.0);
        }
      } else {
        std::bernoulli_distribution sign(0.5);
        for (auto& x : v) x = from_double<T>(sign(rng) ? -1.0 : 1.0);
        std::uniform_int_distribution<std::size_t> pos(0, n ? n - 1 : 0);
        for (int k = 0; k < 8 && n > 0; ++k) v[pos(rng)] = from_double<T>(k % 2 ? 2.0 : 0.5);
      }
    } else {
      std::uniform_int_distribution<long long> d(static_cast<long long>(numeric_traits<T>::lowest()),
                                                 static_cast<long long>(numeric_traits<T>::max()));
      for (auto& x : v) x = static_cast<T>(d(rng));
    }
  } else {
    std::uniform_int_distribution<int> d(-5, 5);
    for (auto& x : v) {
      const int k = d(rng);
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        x = static_cast<T>(k + 5);
      } else if constexpr (is_float_v<T>) {
        x = from_double<T>(k * 0.25);
      } else {
        x = static_cast<T>(k);
      }
    }
  }
  return v;
}

//! The reference result of a value op over x[i * stride] (i < len), in T (exact inputs: the double
//! or modular int64 result converted once, as the kernels convert their accumulator once).
template <class T>
T ref_value(reduce_op op, const T* x, std::int64_t len, std::int64_t stride = 1) {
  using A = typename numeric_traits<T>::accum_type;
  if constexpr (is_float_v<T>) {
    double acc = op == reduce_op::sum ? 0.0 : op == reduce_op::prod ? 1.0
                 : op == reduce_op::min                              ? std::numeric_limits<double>::infinity()
                                                                     : -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (std::int64_t i = 0; i < len; ++i) {
      const double v = to_double(x[i * stride]);
      if (std::isnan(v)) nan = true;
      if (op == reduce_op::sum) acc += v;
      else if (op == reduce_op::prod) acc *= v;
      else if (op == reduce_op::min) acc = std::min(acc, v);
      else acc = std::max(acc, v);
    }
    if (nan) acc = std::numeric_limits<double>::quiet_NaN();
    // fp16/bf16 accumulate in fp32: the exact result rounds to fp32 (exact here), then to T.
    return from_double<T>(static_cast<double>(static_cast<A>(acc)));
  } else {
    std::uint64_t acc = op == reduce_op::sum ? 0u : 1u;
    long long m = op == reduce_op::min ? static_cast<long long>(numeric_traits<T>::max())
                                       : static_cast<long long>(numeric_traits<T>::lowest());
    for (std::int64_t i = 0; i < len; ++i) {
      const long long v = static_cast<long long>(x[i * stride]);
      if (op == reduce_op::sum) acc += static_cast<std::uint64_t>(v);
      else if (op == reduce_op::prod) acc *= static_cast<std::uint64_t>(v);
      else if (op == reduce_op::min) m = std::min(m, v);
      else m = std::max(m, v);
    }
    if (op == reduce_op::sum || op == reduce_op::prod) return static_cast<T>(static_cast<std::int64_t>(acc));
    return static_cast<T>(m);
  }
}

//! The first index of the extreme value (NaN counts as the most extreme), -1 when empty.
template <class T>
std::int64_t ref_index(reduce_op op, const T* x, std::int64_t len, std::int64_t stride = 1) {
  std::int64_t best = -1;
  for (std::int64_t i = 0; i < len; ++i) {
    const T v = x[i * stride];
    if (best < 0) {
      best = i;
      continue;
    }
    const T b = x[best * stride];
    if (is_nan(b)) break;
    if (is_nan(v)) {
      best = i;
      break;
    }
    const double dv = to_double(v), db = to_double(b);
    if (op == reduce_op::argmax ? dv > db : dv < db) best = i;
  }
  return best;
}

inline bool arith(dtype t) { return t != dtype::i8 && t != dtype::u8; }

//! Uploads h (at a possible element offset) to a buffer padded with poison.
template <class T>
device_buffer<T> upload_padded(const stream& s, const std::vector<T>& h, std::size_t offset = 0) {
  device_buffer<T> b;
  EXPECT_TRUE(b.allocate(s, h.size() + offset + 1));
  std::vector<T> padded(h.size() + offset + 1, poison<T>());
  std::copy(h.begin(), h.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset));
  EXPECT_TRUE(b.upload(padded));
  return b;
}

}  // namespace pk::test::red
