// Reduction operators and their element transforms, usable on every target (host and device).
//
// Each reduction is four small function objects: `load(x, i)` turns element i into an accumulator,
// `op(a, b)` combines two accumulators (associative; the kernels keep a <- b order), `identity` is
// the neutral accumulator, and `finalize(a)` turns the result into the output type.
//
// Numerics (documented in reduce.hpp): 16-bit floats accumulate in fp32; integer sums and products
// wrap modulo 2^64 in the 64-bit accumulator (then narrow modularly), so they are exact, order-free and
// free of signed-overflow UB; min/max propagate NaN; argmin/argmax count NaN as the extreme value and
// take the first index on ties; the sum's identity is +0 (so a sum of only -0 values gives +0, as in
// CUB and PyTorch). Mean and variance are computed on x - K, K the first element (welford_load,
// to_mean_var): exact for data within a factor of 2 of K, so a large common offset costs nothing.
#pragma once
#include <pk/portable/macros.hpp>
#include <pk/portable/numeric.hpp>

#include <cstdint>
#include <type_traits>

namespace pk::reduction::ops {

template <class T>
using accum_t = typename numeric_traits<T>::accum_type;

template <class A>
PK_HOST_DEVICE constexpr bool is_nan(const A& a) {
  if constexpr (std::is_floating_point_v<A>) {
    return a != a;
  } else {
    return false;
  }
}

//! The one quiet NaN that results documented as "the canonical NaN" return (the reproducible sum):
//! f32 0x7fc00000, f64 0x7ff8000000000000 (positive, no payload), whatever NaN the hardware produced.
template <class A>
PK_HOST_DEVICE PK_FORCEINLINE A canonical_nan() {
  static_assert(sizeof(A) == 4 || sizeof(A) == 8, "f32 or f64");
  if constexpr (sizeof(A) == 4) {
    return pk::detail::bit_cast<A>(std::uint32_t{0x7fc00000u});
  } else {
    return pk::detail::bit_cast<A>(std::uint64_t{0x7ff8000000000000ull});
  }
}

//! a, or the canonical NaN when a is a NaN of any sign or payload.
template <class A>
PK_HOST_DEVICE PK_FORCEINLINE A canonicalize_nan(A a) {
  return a != a ? canonical_nan<A>() : a;
}

//! Identity of `sum` in A: +0.
template <class A>
PK_HOST_DEVICE constexpr A sum_identity() {
  return A(0);
}

struct sum_op {
  template <class A>
  PK_HOST_DEVICE A operator()(const A& a, const A& b) const {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
    } else {
      return a + b;
    }
  }
};
struct prod_op {
  template <class A>
  PK_HOST_DEVICE A operator()(const A& a, const A& b) const {
    if constexpr (std::is_integral_v<A>) {
      return static_cast<A>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
    } else {
      return a * b;
    }
  }
};
//! NaN-propagating minimum / maximum (the first NaN met wins).
struct min_op {
  template <class A>
  PK_HOST_DEVICE A operator()(const A& a, const A& b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b < a ? b : a;
  }
};
struct max_op {
  template <class A>
  PK_HOST_DEVICE A operator()(const A& a, const A& b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? b : a;
  }
};

//! Value and index for argmin/argmax. index == no_index marks the identity (nothing seen).
template <class A>
struct indexed {
  A value;
  std::int64_t index;
};
inline constexpr std::int64_t no_index = INT64_MAX;

//! argmin (Max = false) / argmax (Max = true): NaN is the most extreme value; ties take the lower
//! index, so the result is the first extreme element whatever the combination order.
template <bool Max>
struct arg_op {
  //! The choice is made on scalars and the result built from them: a select between the two operands'
  //! addresses kept both in scratch memory on AMD (clang-19, gfx90a/gfx942: 24-32 bytes per lane in every
  //! argmin/argmax kernel).
  template <class A>
  PK_HOST_DEVICE indexed<A> operator()(const indexed<A>& a, const indexed<A>& b) const {
    const bool an = is_nan(a.value) && a.index != no_index, bn = is_nan(b.value) && b.index != no_index;
    const bool b_better = Max ? (a.value < b.value) : (b.value < a.value);
    const bool a_better = Max ? (b.value < a.value) : (a.value < b.value);
    const bool tie_to_b = b.index < a.index;
    const bool take_b = (an || bn) ? (an && bn ? tie_to_b : bn) : (b_better || (!a_better && tie_to_b));
    return {take_b ? b.value : a.value, take_b ? b.index : a.index};
  }
};

//! Welford/Chan state: count, mean, sum of squared deviations.
template <class A>
struct welford {
  std::int64_t n;
  A mean;
  A m2;
};
//! Chan et al.'s pairwise merge (stable: no large cancelling sums).
struct welford_op {
  template <class A>
  PK_HOST_DEVICE welford<A> operator()(const welford<A>& a, const welford<A>& b) const {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const std::int64_t n = a.n + b.n;
    const A d = b.mean - a.mean;
    const A fb = static_cast<A>(b.n) / static_cast<A>(n);
    welford<A> r;
    r.n = n;
    r.mean = a.mean + d * fb;
    r.m2 = a.m2 + b.m2 + d * d * static_cast<A>(a.n) * fb;
    return r;
  }
};

// ---- loads: element (value, index) -> accumulator ----
template <class A>
struct value_load {
  template <class T>
  PK_HOST_DEVICE A operator()(const T& x, std::int64_t) const {
    return ::pk::widen<A>(x);
  }
};
template <class A>
struct indexed_load {
  template <class T>
  PK_HOST_DEVICE indexed<A> operator()(const T& x, std::int64_t i) const {
    return indexed<A>{::pk::widen<A>(x), i};
  }
};
//! One element as a Welford state of x - K, K = A(*pivot) the input's first element (read only when
//! an element exists; the reduction loops hoist the load).
template <class A, class T>
struct welford_load {
  const T* pivot;
  PK_HOST_DEVICE welford<A> operator()(const T& x, std::int64_t) const {
    return welford<A>{1, ::pk::widen<A>(x) - ::pk::widen<A>(*pivot), A(0)};
  }
};

// ---- finalizers: accumulator -> output ----
template <class T>
struct to_value {
  template <class A>
  PK_HOST_DEVICE T operator()(const A& a) const {
    return static_cast<T>(a);
  }
};
//! Index of the extreme element, -1 for an empty input.
struct to_index {
  template <class A>
  PK_HOST_DEVICE std::int64_t operator()(const indexed<A>& a) const {
    return a.index == no_index ? -1 : a.index;
  }
};
//! {mean, variance with `correction` subtracted from the count}: both NaN when the input is empty or
//! holds a NaN or an infinity (its shifted mean is then not finite: once an infinity or NaN enters a
//! Welford mean no merge makes it finite again); the variance alone is NaN when count <= correction.
template <class A>
struct mean_var {
  A mean;
  A var;
};
//! `w` is the state of x - pivot (welford_load); the mean is pivot + w.mean.
template <class A>
struct to_mean_var {
  std::int64_t correction;
  PK_HOST_DEVICE mean_var<A> operator()(const welford<A>& w, A pivot) const {
    const A nan = numeric_traits<A>::quiet_nan();
    const bool finite = w.mean - w.mean == A(0);  // false for +-inf and NaN
    if (w.n == 0 || !finite) return mean_var<A>{nan, nan};
    const A var = w.n > correction ? w.m2 / static_cast<A>(w.n - correction) : nan;
    return mean_var<A>{pivot + w.mean, var};
  }
};

//! The identities of the built-in operations, in the accumulator type of T.
template <class T>
struct identities {
  using A = accum_t<T>;
  PK_HOST_DEVICE static constexpr A sum() { return sum_identity<A>(); }
  PK_HOST_DEVICE static constexpr A prod() { return A(1); }
  //! min starts at +inf (floats) or max() (integers); max at -inf or lowest().
  PK_HOST_DEVICE static constexpr A min() {
    if constexpr (numeric_traits<T>::has_infinity) {
      return static_cast<A>(numeric_traits<A>::infinity());
    } else {
      return static_cast<A>(numeric_traits<T>::max());
    }
  }
  PK_HOST_DEVICE static constexpr A max() {
    if constexpr (numeric_traits<T>::has_infinity) {
      return -static_cast<A>(numeric_traits<A>::infinity());
    } else {
      return static_cast<A>(numeric_traits<T>::lowest());
    }
  }
};

}  // namespace pk::reduction::ops
