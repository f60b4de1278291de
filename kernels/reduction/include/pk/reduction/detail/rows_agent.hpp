// Row operations over the last axis, device code: softmax, log_softmax, LayerNorm, RMSNorm, row
// mean/variance. A group of G threads owns a row (segment_policy); pass 1 reduces the row's statistics
// (online max/sum of exp, Welford/Chan, sum of squares) in the accumulator type A, the group combines
// them, and pass 2 re-reads the row (mostly from L2) and writes the output in T.
//
// Defined results (norm.hpp): a row that is all -inf gives softmax 0 and log_softmax -inf; a NaN or a
// +inf anywhere in a row makes the whole softmax/log_softmax row NaN. Mean and variance statistics are
// those of x - K, K the row's first element (exact for data within a factor of 2 of K: a large offset
// costs nothing), and are NaN for a row holding a NaN or an infinity. With eps = 0, a constant row
// (layer_norm) or a zero row (rms_norm) has rstd = +inf and gives y = bias (or 0): x - mean == 0 there
// contributes 0, not 0 * inf.
#pragma once
#include <pk/reduction/detail/reduce_ops.hpp>
#include <pk/reduction/detail/segment_agent.hpp>

#include <cmath>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! exp(x). fp32: exp2f(x log2 e), which CUDA maps onto the SFU's ex2 (2 ulp) instead of expf's longer
//! sequence: softmax is bound by exp throughput at 16-bit bandwidth (H200 bench, bf16 32768 x 1024);
//! the extra rounding of x log2 e is covered by the tests' |x - m| u term.
template <class A>
PK_DEVICE PK_FORCEINLINE A acc_exp(A x) {
  if constexpr (sizeof(A) == 4) {
    return ::exp2f(x * 1.44269504088896341f);
  } else {
    return ::exp(x);
  }
}
template <class A>
PK_DEVICE PK_FORCEINLINE A acc_log(A x) {
  if constexpr (sizeof(A) == 4) {
    return ::logf(x);
  } else {
    return ::log(x);
  }
}
template <class A>
PK_DEVICE PK_FORCEINLINE A acc_rsqrt(A x) {
  if constexpr (sizeof(A) == 4) {
    return 1.0f / ::sqrtf(x);
  } else {
    return 1.0 / ::sqrt(x);
  }
}

//! Calls f(values, count, first_index) over the thread's share of p[0, len): 16-byte vectors (count =
//! V) after a scalar head up to alignment, and a scalar tail (count = 1). The visiting order per thread
//! is fixed by (t, len, alignment).
template <int G, int U, class T, class A, class F>
PK_DEVICE void row_visit(const T* p, std::int64_t len, int t, F&& f) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const std::uintptr_t mis = reinterpret_cast<std::uintptr_t>(p) % 16;
  std::int64_t head = mis % sizeof(T) != 0 ? len : static_cast<std::int64_t>(((16 - mis) % 16) / sizeof(T));
  if (head > len) head = len;
  for (std::int64_t j = t; j < head; j += G) {
    const A a = static_cast<A>(p[j]);
    f(&a, 1, j);
  }
  const T* body = p + head;
  const std::int64_t nvec = (len - head) / V;
  std::int64_t v = t;
  for (; v + std::int64_t{U - 1} * G < nvec; v += std::int64_t{U} * G) {
    vec<T, V> x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = load_vec<V>(body + (v + std::int64_t{u} * G) * V);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      A a[V];
#pragma unroll
      for (int e = 0; e < V; ++e) a[e] = static_cast<A>(x[u][e]);
      f(a, V, head + (v + std::int64_t{u} * G) * V);
    }
  }
  for (; v < nvec; v += G) {
    const vec<T, V> x = load_vec<V>(body + v * V);
    A a[V];
#pragma unroll
    for (int e = 0; e < V; ++e) a[e] = static_cast<A>(x[e]);
    f(a, V, head + v * V);
  }
  for (std::int64_t j = head + nvec * V + t; j < len; j += G) {
    const A a = static_cast<A>(p[j]);
    f(&a, 1, j);
  }
}

//! y[j] = T(g(A(x[j]), j)) over the thread's share of the row; vectorized when x and y have the same
//! alignment (else scalar).
template <int G, int U, class T, class A, class F>
PK_DEVICE void row_transform(const T* x, T* y, std::int64_t len, int t, F&& g) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const std::uintptr_t mx = reinterpret_cast<std::uintptr_t>(x) % 16, my = reinterpret_cast<std::uintptr_t>(y) % 16;
  if (mx != my || mx % sizeof(T) != 0) {
    for (std::int64_t j = t; j < len; j += G) y[j] = static_cast<T>(g(static_cast<A>(x[j]), j));
    return;
  }
  std::int64_t head = static_cast<std::int64_t>(((16 - mx) % 16) / sizeof(T));
  if (head > len) head = len;
  for (std::int64_t j = t; j < head; j += G) y[j] = static_cast<T>(g(static_cast<A>(x[j]), j));
  const std::int64_t nvec = (len - head) / V;
  std::int64_t v = t;
  for (; v + std::int64_t{U - 1} * G < nvec; v += std::int64_t{U} * G) {
    vec<T, V> in[U];
#pragma unroll
    for (int u = 0; u < U; ++u) in[u] = load_vec<V>(x + head + (v + std::int64_t{u} * G) * V);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      vec<T, V> out;
      const std::int64_t j0 = head + (v + std::int64_t{u} * G) * V;
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = static_cast<T>(g(static_cast<A>(in[u][e]), j0 + e));
      store_vec<V>(y + j0, out);
    }
  }
  for (; v < nvec; v += G) {
    const std::int64_t j0 = head + v * V;
    const vec<T, V> in = load_vec<V>(x + j0);
    vec<T, V> out;
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = static_cast<T>(g(static_cast<A>(in[e]), j0 + e));
    store_vec<V>(y + j0, out);
  }
  for (std::int64_t j = head + nvec * V + t; j < len; j += G) y[j] = static_cast<T>(g(static_cast<A>(x[j]), j));
}

//! Online softmax statistics: running maximum m and sum of exp(x - m).
template <class A>
struct softmax_state {
  A m;
  A s;
};
struct softmax_merge {
  template <class A>
  PK_DEVICE softmax_state<A> operator()(const softmax_state<A>& a, const softmax_state<A>& b) const {
    const A ninf = -numeric_traits<A>::infinity();
    const A m = a.m < b.m ? b.m : a.m;
    // A state whose maximum is -inf holds s = 0, or NaN when it saw a NaN (kept: the row becomes NaN).
    const A sa = a.m == ninf ? a.s : a.s * acc_exp(a.m - m);
    const A sb = b.m == ninf ? b.s : b.s * acc_exp(b.m - m);
    return softmax_state<A>{m, sa + sb};
  }
};
struct plus_op {
  template <class A>
  PK_DEVICE A operator()(const A& a, const A& b) const {
    return a + b;
  }
};

//! Adds `count` values, shifted by the pivot k, to a Welford state: the batch's own mean and M2 (two
//! passes over registers), then Chan's merge (one division per batch instead of one per element).
template <class A>
PK_DEVICE PK_FORCEINLINE void welford_add(reduction::ops::welford<A>& w, const A* a, int count, A k) {
  A s = 0;
  for (int e = 0; e < count; ++e) s += a[e] - k;
  const A mb = s / static_cast<A>(count);  // count is 1 or a power of two: exact scaling
  A m2 = 0;
  for (int e = 0; e < count; ++e) m2 += ((a[e] - k) - mb) * ((a[e] - k) - mb);
  w = reduction::ops::welford_op{}(w, reduction::ops::welford<A>{count, mb, m2});
}

template <int B, int G, int U, class T, class A, reduction::row_kind K>
PK_KERNEL PK_LAUNCH_BOUNDS(B) void rows_kernel(rows_call c) {
  using reduction::row_kind;
  using wf = reduction::ops::welford<A>;
  using state_t = std::conditional_t<K == row_kind::softmax || K == row_kind::log_softmax, softmax_state<A>,
                                     std::conditional_t<K == row_kind::rms_norm, A, wf>>;
  using merge_t = std::conditional_t<K == row_kind::softmax || K == row_kind::log_softmax, softmax_merge,
                                     std::conditional_t<K == row_kind::rms_norm, plus_op, reduction::ops::welford_op>>;
  using reducer = group_reducer<B, G, state_t, merge_t>;
  PK_SHARED(typename reducer::temp_storage, storage);
  constexpr int groups = B / G;
  const int g = thread_rank() / G, t = thread_rank() % G;
  const T* w = static_cast<const T*>(c.weight);
  const T* bias = static_cast<const T*>(c.bias);
  const A ninf = -numeric_traits<A>::infinity();
  for (std::int64_t base = std::int64_t{block_idx().x} * groups; base < c.rows;
       base += std::int64_t{grid_dim().x} * groups) {
    const std::int64_t row = base + g;
    const bool live = row < c.rows;
    const std::int64_t len = live ? c.cols : 0;
    const T* x = static_cast<const T*>(c.x) + (live ? row * c.x_stride : 0);
    T* y = c.y != nullptr && live ? static_cast<T*>(c.y) + row * c.y_stride : static_cast<T*>(c.y);
    // The pivot of the Welford statistics: the row's first element, read by every thread of the group.
    constexpr bool welford_kind = K == row_kind::layer_norm || K == row_kind::mean_var;
    [[maybe_unused]] const A k = welford_kind && len > 0 ? static_cast<A>(x[0]) : A(0);
    state_t st;
    if constexpr (K == row_kind::softmax || K == row_kind::log_softmax) {
      st = softmax_state<A>{ninf, A(0)};
      row_visit<G, U, T, A>(x, len, t, [&](const A* a, int count, std::int64_t) {
        for (int e = 0; e < count; ++e) {
          const A v = a[e];
          if (v > st.m) {
            st.s = st.s * acc_exp(st.m - v) + A(1);
            st.m = v;
          } else if (v != ninf) {
            st.s += acc_exp(v - st.m);  // NaN stays NaN
          }
        }
      });
    } else if constexpr (K == row_kind::rms_norm) {
      st = A(0);
      row_visit<G, U, T, A>(x, len, t, [&](const A* a, int count, std::int64_t) {
        for (int e = 0; e < count; ++e) st += a[e] * a[e];
      });
    } else {
      st = wf{0, A(0), A(0)};
      row_visit<G, U, T, A>(x, len, t, [&](const A* a, int count, std::int64_t) { welford_add(st, a, count, k); });
    }
    st = reducer::all_reduce(st, merge_t{}, storage);
    if (live) {
      [[maybe_unused]] const A nan = numeric_traits<A>::quiet_nan(), inf = numeric_traits<A>::infinity();
      if constexpr (K == row_kind::softmax || K == row_kind::log_softmax) {
        // NaN or +inf in the row (s is NaN, or the maximum is +inf): the whole row is NaN.
        const bool nan_row = st.s != st.s || st.m == inf;
        const bool empty = st.m == ninf;  // all -inf
        if constexpr (K == row_kind::softmax) {
          const A inv = A(1) / st.s;
          const A m = st.m;
          row_transform<G, U, T, A>(x, y, len, t, [&](A v, std::int64_t) {
            return nan_row ? nan : empty ? A(0) : acc_exp(v - m) * inv;
          });
        } else {
          const A shift = st.m + acc_log(st.s);
          row_transform<G, U, T, A>(x, y, len, t,
                                    [&](A v, std::int64_t) { return nan_row ? nan : empty ? ninf : v - shift; });
        }
      } else if constexpr (K == row_kind::rms_norm) {
        const A rstd = acc_rsqrt(st / static_cast<A>(c.cols) + static_cast<A>(c.eps));
        // eps = 0 and a zero row: rstd = +inf, and x = 0 gives 0 (not 0 * inf).
        row_transform<G, U, T, A>(x, y, len, t, [&](A v, std::int64_t j) {
          return (v == A(0) && rstd == inf ? A(0) : v * rstd) * static_cast<A>(w[j]);
        });
        if (t == 0 && c.stat1 != nullptr) static_cast<float*>(c.stat1)[row] = static_cast<float>(rstd);
      } else if constexpr (K == row_kind::layer_norm) {
        // Statistics of x - k; a NaN or an infinity in the row makes the shifted mean non-finite, and
        // then mean and rstd are NaN (so is every y).
        const bool finite = st.mean - st.mean == A(0);
        const A ms = finite ? st.mean : nan;
        const A rstd = finite ? acc_rsqrt(st.m2 / static_cast<A>(c.cols) + static_cast<A>(c.eps)) : nan;
        // x - mean as (x - k) - ms: exact shift, one rounding. x == mean contributes 0 also when
        // rstd = +inf (eps = 0, constant row).
        const auto xhat = [=](A v) {
          const A d = (v - k) - ms;
          return d == A(0) ? A(0) : d * rstd;
        };
        if (bias != nullptr) {
          row_transform<G, U, T, A>(x, y, len, t, [&](A v, std::int64_t j) {
            return xhat(v) * static_cast<A>(w[j]) + static_cast<A>(bias[j]);
          });
        } else {
          row_transform<G, U, T, A>(x, y, len, t, [&](A v, std::int64_t j) { return xhat(v) * static_cast<A>(w[j]); });
        }
        if (t == 0 && c.stat0 != nullptr) static_cast<float*>(c.stat0)[row] = static_cast<float>(k + ms);
        if (t == 0 && c.stat1 != nullptr) static_cast<float*>(c.stat1)[row] = static_cast<float>(rstd);
      } else {
        if (t == 0) {
          const reduction::ops::mean_var<A> mv = reduction::ops::to_mean_var<A>{c.correction}(st, k);
          static_cast<A*>(c.stat0)[row] = mv.mean;
          static_cast<A*>(c.stat1)[row] = mv.var;
        }
      }
    }
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
