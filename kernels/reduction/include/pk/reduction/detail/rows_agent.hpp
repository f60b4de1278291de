// Row operations over the last axis, device code: softmax, log_softmax, LayerNorm, RMSNorm, row
// mean/variance. A group of G threads owns a row (row_policy), in one of two strategies:
//  - rows_onchip_kernel: the row is loaded once into the group's registers; the statistics (maximum
//    then sum of exp; mean then the sum of squared deviations; sum of squares) are exact passes over the
//    registers in the accumulator type A, each combined over the group, and the output is written from
//    the registers;
//  - rows_stream_kernel (rows of any width): pass 1 reduces the row's statistics in one streaming pass
//    (online max/sum of exp, Welford/Chan, sum of squares), the group combines them, and pass 2 re-reads
//    the row (mostly from L2) and writes the output in T.
//
// Defined results (norm.hpp): a row that is all -inf gives softmax 0 and log_softmax -inf; a NaN or a
// +inf anywhere in a row makes the whole softmax/log_softmax row NaN. Mean and variance statistics are
// those of x - K, K the row's first element (exact for data within a factor of 2 of K: a large offset
// costs nothing), and are NaN for a row holding a NaN or an infinity. With eps = 0, a constant row
// (layer_norm) or a zero row (rms_norm) has rstd = +inf and gives y = bias (or 0): x - mean == 0 there
// contributes 0, not 0 * inf.
#pragma once
#include <pk/portable/async_copy.hpp>
#include <pk/portable/convert.hpp>
#include <pk/portable/math.hpp>
#include <pk/reduction/detail/reduce_ops.hpp>
#include <pk/reduction/detail/segment_agent.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! exp(x). fp32: exp2f(x log2 e), which CUDA maps onto the SFU's ex2 (2 ulp) instead of expf's longer
//! sequence: softmax is bound by exp throughput at 16-bit bandwidth (H200 bench, bf16 32768 x 1024);
//! the extra rounding of x log2 e is covered by the tests' |x - m| u term.
template <class A>
PK_DEVICE PK_FORCEINLINE A acc_exp(A x) {
  if constexpr (sizeof(A) == 4) {
    return ::exp2f(x * log2e);
  } else {
    return ::exp(x);
  }
}
//! exp(x) of a softmax term whose result is stored as T. For 16-bit T, 2^(x log2 e) through exp2_fast (the
//! approximate instruction with flush to zero): one instruction where exp2f's handling of subnormal results
//! takes four, and the 16-bit row kernels issue-bound (H200, ncu: bf16 softmax 32768 x 1024 issued 32
//! instructions an element, 65% of the issue slots busy). Results below 2^-126 become 0: bf16's subnormals
//! (fp16 has none that small); the tests' rule adds 2^-126 for 16-bit softmax outputs. Wider T keeps acc_exp.
template <class T, class A>
PK_DEVICE PK_FORCEINLINE A term_exp(A x) {
  if constexpr (sizeof(A) == 4 && sizeof(T) == 2) {
    return exp2_fast(x * log2e);
  } else {
    return acc_exp(x);
  }
}
//! log(x) of the softmax sum (x >= 1: the maximum contributes exp(0)). fp32: log2_fast(x) ln 2, within
//! a few ulp of log(x) for x >= 1, covered by the tests' 4 |log s| u term.
template <class A>
PK_DEVICE PK_FORCEINLINE A acc_log(A x) {
  if constexpr (sizeof(A) == 4) {
    return log2_fast(x) * ln2;
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

//! The larger of m and v, a NaN v ignored (m is never NaN here): one max instruction (CUDA FMNMX, AMD
//! v_max), where `v > m ? v : m` is a compare and a select (H200 SASS of the 16-bit softmax: 3.4 of its 26
//! instructions an element).
template <class A>
PK_DEVICE PK_FORCEINLINE A max_num(A m, A v) {
  if constexpr (sizeof(A) == 4) {
    return ::fmaxf(m, v);
  } else {
    return ::fmax(m, v);
  }
}

//! Calls f(values, count, first_index) over the thread's share of p[0, len): 16-byte vectors (count =
//! V) after a scalar head up to alignment, and a scalar tail (count = 1). The visiting order per thread
//! is fixed by (t, len, alignment). Cached: the body's vectors 0 .. cached - 1 are also stored to cache[] (the
//! slots row_transform reads them back from: the same thread's, no barrier).
template <int G, int U, class T, class A, bool Cached = false, class F>
PK_DEVICE void row_visit(const T* p, std::int64_t len, int t, F&& f, vec<T, static_cast<int>(16 / sizeof(T))>* cache = nullptr,
                         std::int64_t cached = 0) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const std::uintptr_t mis = reinterpret_cast<std::uintptr_t>(p) % 16;
  std::int64_t head = mis % sizeof(T) != 0 ? len : static_cast<std::int64_t>(((16 - mis) % 16) / sizeof(T));
  if (head > len) head = len;
  for (std::int64_t j = t; j < head; j += G) {
    const A a = ::pk::widen<A>(p[j]);
    f(&a, 1, j);
  }
  const T* body = p + head;
  const std::int64_t nvec = (len - head) / V;
  std::int64_t v = t;
  for (; v + std::int64_t{U - 1} * G < nvec; v += std::int64_t{U} * G) {
    vec<T, V> x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) x[u] = load_vec<V>(body + (v + std::int64_t{u} * G) * V);
    if constexpr (Cached) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (v + std::int64_t{u} * G < cached) cache[v + std::int64_t{u} * G] = x[u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      A a[V];
#pragma unroll
      for (int e = 0; e < V; ++e) a[e] = ::pk::widen<A>(x[u][e]);
      f(a, V, head + (v + std::int64_t{u} * G) * V);
    }
  }
  for (; v < nvec; v += G) {
    const vec<T, V> x = load_vec<V>(body + v * V);
    if constexpr (Cached)
      if (v < cached) cache[v] = x;
    A a[V];
#pragma unroll
    for (int e = 0; e < V; ++e) a[e] = ::pk::widen<A>(x[e]);
    f(a, V, head + v * V);
  }
  for (std::int64_t j = head + nvec * V + t; j < len; j += G) {
    const A a = ::pk::widen<A>(p[j]);
    f(&a, 1, j);
  }
}

//! y[j] = T(g(A(x[j]), j)) over the thread's share of the row; vectorized when x and y have the same
//! alignment (else scalar). Cached: the body's vectors 0 .. cached - 1 come from cache[] (row_visit's copies),
//! the rest from x.
template <int G, int U, class T, class A, bool Cached = false, class F>
PK_DEVICE void row_transform(const T* x, T* y, std::int64_t len, int t, F&& g,
                             const vec<T, static_cast<int>(16 / sizeof(T))>* cache = nullptr, std::int64_t cached = 0) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const std::uintptr_t mx = reinterpret_cast<std::uintptr_t>(x) % 16, my = reinterpret_cast<std::uintptr_t>(y) % 16;
  if (mx != my || mx % sizeof(T) != 0) {
    for (std::int64_t j = t; j < len; j += G) y[j] = static_cast<T>(g(::pk::widen<A>(x[j]), j));
    return;
  }
  std::int64_t head = static_cast<std::int64_t>(((16 - mx) % 16) / sizeof(T));
  if (head > len) head = len;
  for (std::int64_t j = t; j < head; j += G) y[j] = static_cast<T>(g(::pk::widen<A>(x[j]), j));
  const std::int64_t nvec = (len - head) / V;
  std::int64_t v = t;
  for (; v + std::int64_t{U - 1} * G < nvec; v += std::int64_t{U} * G) {
    vec<T, V> in[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t i = v + std::int64_t{u} * G;
      if constexpr (Cached)
        in[u] = i < cached ? cache[i] : load_vec<V>(x + head + i * V);
      else
        in[u] = load_vec<V>(x + head + i * V);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      vec<T, V> out;
      const std::int64_t j0 = head + (v + std::int64_t{u} * G) * V;
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = static_cast<T>(g(::pk::widen<A>(in[u][e]), j0 + e));
      store_vec<V>(y + j0, out);
    }
  }
  for (; v < nvec; v += G) {
    const std::int64_t j0 = head + v * V;
    vec<T, V> in;
    if constexpr (Cached)
      in = v < cached ? cache[v] : load_vec<V>(x + j0);
    else
      in = load_vec<V>(x + j0);
    vec<T, V> out;
#pragma unroll
    for (int e = 0; e < V; ++e) out[e] = static_cast<T>(g(::pk::widen<A>(in[e]), j0 + e));
    store_vec<V>(y + j0, out);
  }
  for (std::int64_t j = head + nvec * V + t; j < len; j += G) y[j] = static_cast<T>(g(::pk::widen<A>(x[j]), j));
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

//! Cached (reduction::row_cache_vectors): each group keeps the first c.cache_vectors 16-byte vectors of its row's
//! body in its slice of the dynamic shared memory between the passes; pass 2 reads them from there and the rest
//! from L2 or DRAM. A separate instance, so that rows without it run the plain loops (the run-time test per
//! vector cost 3-7% where nothing was kept: H100, bf16 rows of 4096-65536 columns, 2026-12-05).
template <int B, int G, int U, class T, class A, reduction::row_kind K, bool Cached = false>
PK_KERNEL PK_LAUNCH_BOUNDS(B) void rows_stream_kernel(rows_call c) {
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
  // The cache is used where pass 2 is vectorized like pass 1 (x and y on the same 16-byte phase).
  using vec_t = vec<T, static_cast<int>(16 / sizeof(T))>;
  vec_t* const cache = Cached && c.cache_vectors > 0 ? dynamic_shared<vec_t>() + std::int64_t{g} * c.cache_vectors : nullptr;
  for (std::int64_t base = std::int64_t{block_idx().x} * groups; base < c.rows;
       base += std::int64_t{grid_dim().x} * groups) {
    const std::int64_t row = base + g;
    const bool live = row < c.rows;
    const std::int64_t len = live ? c.cols : 0;
    // x may be null when the rows are empty (cols = 0): it is offset only for a row with elements.
    const T* x = static_cast<const T*>(c.x) + (len > 0 ? row * c.x_stride : 0);
    T* y = c.y != nullptr && live ? static_cast<T*>(c.y) + row * c.y_stride : static_cast<T*>(c.y);
    const std::uintptr_t xm = reinterpret_cast<std::uintptr_t>(x) % 16;
    const std::int64_t cached =
        cache != nullptr && y != nullptr && xm == reinterpret_cast<std::uintptr_t>(y) % 16 && xm % sizeof(T) == 0
            ? c.cache_vectors
            : 0;
    // The pivot of the Welford statistics: the row's first element, read by every thread of the group.
    constexpr bool welford_kind = K == row_kind::layer_norm || K == row_kind::mean_var;
    [[maybe_unused]] const A k = welford_kind && len > 0 ? ::pk::widen<A>(x[0]) : A(0);
    state_t st;
    if constexpr (K == row_kind::softmax || K == row_kind::log_softmax) {
      st = softmax_state<A>{ninf, A(0)};
      // A batch (one vector) at a time: its maximum, one rescale of the sum when it moves, then the
      // batch's terms against the new maximum (shifted by 0 while it is -inf: exp(-inf) = 0, a NaN stays
      // NaN), instead of a compare and branch per element.
      row_visit<G, U, T, A, Cached>(x, len, t, [&](const A* a, int count, std::int64_t) {
        A bm = st.m;
        for (int e = 0; e < count; ++e) bm = max_num(bm, a[e]);
        if (bm > st.m) {
          st.s = st.m == ninf ? st.s : st.s * term_exp<T>(st.m - bm);
          st.m = bm;
        }
        const A shift = st.m == ninf ? A(0) : st.m;
        for (int e = 0; e < count; ++e) st.s += term_exp<T>(a[e] - shift);
      }, cache, cached);
    } else if constexpr (K == row_kind::rms_norm) {
      st = A(0);
      row_visit<G, U, T, A, Cached>(x, len, t, [&](const A* a, int count, std::int64_t) {
        for (int e = 0; e < count; ++e) st += a[e] * a[e];
      }, cache, cached);
    } else {
      st = wf{0, A(0), A(0)};
      row_visit<G, U, T, A, Cached>(
          x, len, t, [&](const A* a, int count, std::int64_t) { welford_add(st, a, count, k); }, cache, cached);
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
          row_transform<G, U, T, A, Cached>(x, y, len, t, [&](A v, std::int64_t) {
            return nan_row ? nan : empty ? A(0) : term_exp<T>(v - m) * inv;
          }, cache, cached);
        } else {
          const A shift = st.m + acc_log(st.s);
          row_transform<G, U, T, A, Cached>(x, y, len, t,
                                    [&](A v, std::int64_t) { return nan_row ? nan : empty ? ninf : v - shift; }, cache, cached);
        }
      } else if constexpr (K == row_kind::rms_norm) {
        const A rstd = acc_rsqrt(st / static_cast<A>(c.cols) + static_cast<A>(c.eps));
        // eps = 0 and a zero row: rstd = +inf, and x = 0 gives 0 (not 0 * inf).
        row_transform<G, U, T, A, Cached>(x, y, len, t, [&](A v, std::int64_t j) {
          return (v == A(0) && rstd == inf ? A(0) : v * rstd) * ::pk::widen<A>(w[j]);
        }, cache, cached);
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
          row_transform<G, U, T, A, Cached>(x, y, len, t, [&](A v, std::int64_t j) {
            return xhat(v) * ::pk::widen<A>(w[j]) + ::pk::widen<A>(bias[j]);
          }, cache, cached);
        } else {
          row_transform<G, U, T, A, Cached>(x, y, len, t, [&](A v, std::int64_t j) { return xhat(v) * ::pk::widen<A>(w[j]); }, cache, cached);
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

//! A row held in the registers of a group of G threads, converted to the accumulator type A once: thread t
//! holds vectors k = 0..R-1 of V elements at (k G + t) V .. (k G + t) V + V - 1 (the group reads vector k
//! side by side: coalesced). Rows of up to G R V elements; in-row indices are int (at most G R V, a few ten
//! thousand). Holding A rather than T costs 16-bit rows twice the registers for the values and saves a
//! conversion per element and pass (H200 SASS of the 16-bit softmax: 6 of 26 instructions an element were
//! conversions); each pass's results can be kept in place (softmax's exponentials).
template <int G, int R, class T, class A>
struct held_row {
  static constexpr int V = static_cast<int>(16 / sizeof(T));
  //! 16-bit elements with fp32 accumulators convert two at a time (from_storage_x2, to_storage_x2).
  static constexpr bool packed = sizeof(T) == 2 && std::is_same_v<A, float>;
  A a[R][V];

  PK_DEVICE static PK_FORCEINLINE int first(int k, int t) { return (k * G + t) * V; }
  //! out[e] = A(v[e]).
  PK_DEVICE static PK_FORCEINLINE void widen(const vec<T, V>& v, A (&out)[V]) {
    if constexpr (packed) {
      const auto w = ::pk::detail::bit_cast<vec<std::uint32_t, V / 2>>(v);
#pragma unroll
      for (int e = 0; e < V; e += 2) from_storage_x2<T>(w[e / 2], out[e], out[e + 1]);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) out[e] = ::pk::widen<A>(v[e]);
    }
  }

  //! Starts the asynchronous copy of the thread's whole vectors of x[0, len) (when `vectors`) into `stage`,
  //! a row of G R V elements in shared memory laid out as x: the slots load<true> reads back. The thread
  //! reads only what it copied, so its own async_copy_wait_pending orders the two (no barrier).
  PK_DEVICE static PK_FORCEINLINE void prefetch(T* stage, const T* x, int len, int t, bool vectors) {
    if (!vectors) return;
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const int j0 = first(k, t);
      if (j0 + V <= len) async_copy_16(stage + j0, x + j0, true);
    }
  }
  //! Loads x[0, len): 16-byte vectors when `vectors` (x 16-byte aligned), else V element loads per slot;
  //! with Staged, the whole vectors from `stage` (prefetch's copy of x) and the rest from x. Slots past len
  //! hold `pad`, chosen so that a pass over every slot (each_slot, apply) is the pass over the row: -inf for
  //! softmax's maximum and exponentials, 0 for a sum of squares.
  template <bool Staged = false>
  PK_DEVICE PK_FORCEINLINE void load(const T* x, const T* stage, int len, int t, bool vectors, A pad) {
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const int j0 = first(k, t);
      if (vectors && j0 + V <= len) {
        widen(load_vec<V>((Staged ? stage : x) + j0), a[k]);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) a[k][e] = j0 + e < len ? ::pk::widen<A>(x[j0 + e]) : pad;
      }
    }
  }
  //! f(value) for every slot, the padding included.
  template <class F>
  PK_DEVICE PK_FORCEINLINE void each_slot(F&& f) const {
#pragma unroll
    for (int k = 0; k < R; ++k) {
#pragma unroll
      for (int e = 0; e < V; ++e) f(a[k][e]);
    }
  }
  //! value = g(value) for every slot, the padding included.
  template <class F>
  PK_DEVICE PK_FORCEINLINE void apply(F&& g) {
#pragma unroll
    for (int k = 0; k < R; ++k) {
#pragma unroll
      for (int e = 0; e < V; ++e) a[k][e] = g(a[k][e]);
    }
  }
  //! f(value) for every element of the row the thread holds (whole vectors without per-element checks).
  template <class F>
  PK_DEVICE PK_FORCEINLINE void each(int len, int t, F&& f) const {
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const int j0 = first(k, t);
      if (j0 + V <= len) {
#pragma unroll
        for (int e = 0; e < V; ++e) f(a[k][e]);
      } else if (j0 < len) {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (j0 + e < len) f(a[k][e]);
      }
    }
  }
  //! y[j] = value over the thread's elements.
  PK_DEVICE PK_FORCEINLINE void fill(T* y, int len, int t, bool vectors, T value) const {
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const int j0 = first(k, t);
      if (vectors && j0 + V <= len) {
        vec<T, V> out;
#pragma unroll
        for (int e = 0; e < V; ++e) out[e] = value;
        store_vec<V>(y + j0, out);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (j0 + e < len) y[j0 + e] = value;
      }
    }
  }
  //! y[j] = T(g(value, A(w[j]), A(b[j]))) over the thread's elements; w and b are read only when HasW /
  //! HasB (else 1 and 0 are passed). Vectors when `vectors` (y, w and b 16-byte aligned).
  template <bool HasW, bool HasB, class F>
  PK_DEVICE PK_FORCEINLINE void store(T* y, const T* w, const T* b, int len, int t, bool vectors, F&& g) const {
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const int j0 = first(k, t);
      if (vectors && j0 + V <= len) {
        A wa[V], ba[V];
#pragma unroll
        for (int e = 0; e < V; ++e) {
          wa[e] = A(1);
          ba[e] = A(0);
        }
        if constexpr (HasW) widen(load_vec<V>(w + j0), wa);
        if constexpr (HasB) widen(load_vec<V>(b + j0), ba);
        vec<T, V> out;
        if constexpr (packed) {
          vec<std::uint32_t, V / 2> o;
#pragma unroll
          for (int e = 0; e < V; e += 2)
            o[e / 2] = to_storage_x2<T>(g(a[k][e], wa[e], ba[e]), g(a[k][e + 1], wa[e + 1], ba[e + 1]));
          out = ::pk::detail::bit_cast<vec<T, V>>(o);
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e) out[e] = static_cast<T>(g(a[k][e], wa[e], ba[e]));
        }
        store_vec<V>(y + j0, out);
      } else if (j0 < len) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const int j = j0 + e;
          if (j < len)
            y[j] = static_cast<T>(g(a[k][e], HasW ? ::pk::widen<A>(w[j]) : A(1), HasB ? ::pk::widen<A>(b[j]) : A(0)));
        }
      }
    }
  }
};

struct max_op {
  template <class A>
  PK_DEVICE A operator()(const A& a, const A& b) const {
    return max_num(a, b);  // neither is NaN (max_num drops NaN elements): max_num(a, b) == max_num(b, a)
  }
};

//! The row operations on rows held in registers (an on-chip row_policy; cols <= G R V). The results
//! follow the stream kernel's definitions (norm.hpp); the statistics are exact two-pass values over the
//! registers: softmax's maximum, then the sum of exp(x - max); the mean of x - K (K the row's first
//! element), then the sum of squared deviations from it.
//! Blocks per SM the on-chip kernels ask nvcc to fit: 16-bit rows other than layer_norm at 64 registers
//! (1024 threads per SM), the others at 128 (512 threads per SM). Left free, ptxas gave the 512-thread bf16
//! rms_norm 78 registers, one block per SM (ncu: 25% occupancy), where a streaming 256-thread block at 48
//! registers ran 1.6x faster (H200, 2048 x 16384; 1.15x with the cap). At 64 these kernels do not spill
//! on sm_90a, the 16-bit layer_norm does (36-64 bytes); fp32/fp64 rows take 120-128 registers unbounded
//! and a bound of one block let ptxas take 146 (fp32 layer_norm 1.35x slower): 128 is what they need.
template <int B, class T, reduction::row_kind K>
inline constexpr int onchip_blocks_per_sm =
    sizeof(T) == 2 && K != reduction::row_kind::layer_norm ? (1024 / B > 0 ? 1024 / B : 1) : (512 / B > 0 ? 512 / B : 1);

//! S >= 2 (a staged policy): each group owns a ring of S rows in the dynamic shared memory (S B R 16 bytes a
//! block) and keeps the copies of its next S - 1 rows in flight while it computes this one; S == 0: each row
//! is loaded from x into the registers in its turn.
template <int B, int G, int R, int S, class T, class A, reduction::row_kind K>
PK_KERNEL PK_LAUNCH_BOUNDS_OCCUPANCY(B, (onchip_blocks_per_sm<B, T, K>)) void rows_onchip_kernel(rows_call c) {
  using reduction::row_kind;
  using sum_r = group_reducer<B, G, A, plus_op>;
  using max_r = group_reducer<B, G, A, max_op>;
  using held = held_row<G, R, T, A>;
  static_assert(S == 0 || S >= 2, "a ring has at least two stages");
  PK_SHARED(typename sum_r::temp_storage, storage);
  constexpr int groups = B / G;
  constexpr int stage_elems = G * R * held::V;
  const int g = thread_rank() / G, t = thread_rank() % G;
  const T* w = static_cast<const T*>(c.weight);
  const T* bias = static_cast<const T*>(c.bias);
  const A ninf = -numeric_traits<A>::infinity(), inf = numeric_traits<A>::infinity();
  const A nan = numeric_traits<A>::quiet_nan();
  const A cols = static_cast<A>(c.cols);
  const std::int64_t step = std::int64_t{grid_dim().x} * groups;
  // x may be null when the rows are empty (cols = 0): it is offset only for a row with elements.
  const auto row_x = [&](std::int64_t row) {
    return static_cast<const T*>(c.x) + (row < c.rows && c.cols > 0 ? row * c.x_stride : 0);
  };
  [[maybe_unused]] T* ring = nullptr;
  [[maybe_unused]] int stage = 0;
  if constexpr (S >= 2) {
    // The ring's first S - 1 rows; one commit a row (empty past the last row) keeps the count of groups in
    // flight the same for every thread.
    ring = dynamic_shared<T>() + std::int64_t{g} * S * stage_elems;
    const std::int64_t first = std::int64_t{block_idx().x} * groups + g;
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      const std::int64_t row = first + s * step;
      if (row < c.rows) held::prefetch(ring + s * stage_elems, row_x(row), static_cast<int>(c.cols), t, c.vectors);
      async_copy_commit();
    }
  }
  for (std::int64_t base = std::int64_t{block_idx().x} * groups; base < c.rows; base += step) {
    const std::int64_t row = base + g;
    const bool live = row < c.rows;
    const int len = live ? static_cast<int>(c.cols) : 0;
    const T* x = row_x(row);
    T* y = c.y != nullptr && live ? static_cast<T*>(c.y) + row * c.y_stride : static_cast<T*>(c.y);
    held h;
    [[maybe_unused]] const T* staged_row = nullptr;
    if constexpr (S >= 2) {
      // The row S - 1 ahead goes into the stage this group read last (its reads are in registers by now).
      const std::int64_t ahead = row + (S - 1) * step;
      if (ahead < c.rows)
        held::prefetch(ring + ((stage + S - 1) % S) * stage_elems, row_x(ahead), static_cast<int>(c.cols), t, c.vectors);
      async_copy_commit();
      async_copy_wait_pending<S - 1>();  // this row's copies are done
      staged_row = ring + stage * stage_elems;
      stage = (stage + 1) % S;
    }
    const auto load = [&](A pad) { h.template load<(S >= 2)>(x, staged_row, len, t, c.vectors, pad); };
    if constexpr (K == row_kind::softmax || K == row_kind::log_softmax) {
      // The maximum (NaN ignored), then the sum of exp(x - max) shifted by 0 for a row of -inf (so a -inf
      // gives exp(-inf) = 0): a NaN anywhere makes the sum NaN. The row is NaN when the sum is NaN or the
      // maximum is +inf; all -inf (the maximum stays -inf, the sum 0) gives 0 (log_softmax: -inf). The
      // padding is -inf: neither moves the maximum nor adds to the sum.
      load(ninf);
      A m = ninf;
      h.each_slot([&](A v) { m = max_num(m, v); });
      m = max_r::all_reduce_commutative(m, max_op{}, storage);
      const A shift = m == ninf ? A(0) : m;
      A s = 0;
      if constexpr (K == row_kind::softmax) {
        // Each exponential is kept in place for the output.
        h.apply([&](A v) {
          const A e = term_exp<T>(v - shift);
          s += e;
          return e;
        });
      } else {
        h.each_slot([&](A v) { s += term_exp<T>(v - shift); });
      }
      s = sum_r::all_reduce_commutative(s, plus_op{}, storage);
      if (live) {
        const bool nan_row = s != s || m == inf, empty = m == ninf;
        if (nan_row || empty) {
          h.fill(y, len, t, c.vectors, static_cast<T>(nan_row ? nan : K == row_kind::softmax ? A(0) : ninf));
        } else if constexpr (K == row_kind::softmax) {
          const A inv = A(1) / s;
          h.template store<false, false>(y, w, bias, len, t, c.vectors, [inv](A e, A, A) { return e * inv; });
        } else {
          const A lse = m + acc_log(s);
          h.template store<false, false>(y, w, bias, len, t, c.vectors, [lse](A v, A, A) { return v - lse; });
        }
      }
    } else if constexpr (K == row_kind::rms_norm) {
      load(A(0));  // the padding adds 0 to the sum of squares
      A ss = 0;
      h.each_slot([&](A v) { ss += v * v; });
      ss = sum_r::all_reduce_commutative(ss, plus_op{}, storage);
      const A rstd = acc_rsqrt(ss / cols + static_cast<A>(c.eps));
      if (live) {
        if (rstd == inf) {
          // eps = 0 and a zero row: x = 0 gives 0 (not 0 * inf).
          h.template store<true, false>(y, w, bias, len, t, c.vectors,
                                        [rstd](A v, A wj, A) { return (v == A(0) ? A(0) : v * rstd) * wj; });
        } else {
          h.template store<true, false>(y, w, bias, len, t, c.vectors, [rstd](A v, A wj, A) { return v * rstd * wj; });
        }
        if (t == 0 && c.stat1 != nullptr) static_cast<float*>(c.stat1)[row] = static_cast<float>(rstd);
      }
    } else {
      // Statistics of x - k, k the row's first element (read by every thread of the group), held in place
      // of x: the padding (k) becomes 0 and adds nothing to the mean; the squared deviations skip it.
      const A k = len > 0 ? ::pk::widen<A>(x[0]) : A(0);
      load(k);
      A s1 = 0;
      h.apply([&](A v) {
        const A d = v - k;
        s1 += d;
        return d;
      });
      const A ms = sum_r::all_reduce_commutative(s1, plus_op{}, storage) / cols;
      A s2 = 0;
      h.each(len, t, [&](A d) { s2 += (d - ms) * (d - ms); });
      s2 = sum_r::all_reduce_commutative(s2, plus_op{}, storage);
      if (live) {
        if constexpr (K == row_kind::layer_norm) {
          // A NaN or an infinity in the row makes the shifted mean non-finite: mean, rstd and y are NaN.
          const bool finite = ms - ms == A(0);
          const A msf = finite ? ms : nan;
          const A rstd = finite ? acc_rsqrt(s2 / cols + static_cast<A>(c.eps)) : nan;
          // x - mean as (x - k) - ms; x == mean contributes 0 also when rstd = +inf (eps = 0: the only
          // case that needs the test).
          const auto run = [&](auto norm) {
            if (bias != nullptr) {
              h.template store<true, true>(y, w, bias, len, t, c.vectors, norm);
            } else {
              h.template store<true, false>(y, w, bias, len, t, c.vectors, norm);
            }
          };
          if (rstd == inf) {
            run([=](A d, A wj, A bj) {
              const A c0 = d - msf;
              return (c0 == A(0) ? A(0) : c0 * rstd) * wj + bj;
            });
          } else {
            run([=](A d, A wj, A bj) { return (d - msf) * rstd * wj + bj; });
          }
          if (t == 0 && c.stat0 != nullptr) static_cast<float*>(c.stat0)[row] = static_cast<float>(k + msf);
          if (t == 0 && c.stat1 != nullptr) static_cast<float*>(c.stat1)[row] = static_cast<float>(rstd);
        } else {
          if (t == 0) {
            const reduction::ops::mean_var<A> mv =
                reduction::ops::to_mean_var<A>{c.correction}(reduction::ops::welford<A>{c.cols, ms, s2}, k);
            static_cast<A*>(c.stat0)[row] = mv.mean;
            static_cast<A*>(c.stat1)[row] = mv.var;
          }
        }
      }
    }
  }
}

}  // namespace impl
PK_DETAIL_TARGET_END
