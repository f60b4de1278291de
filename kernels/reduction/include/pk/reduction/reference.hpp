// Reductions: CPU references (host scalar code, kept apart from the kernels).
//
// reproducible_sum() evaluates the exact summation order of the reproducible mode
// (reduction::reproducible_layout in reduce_policy.hpp) sequentially: pk::reduce with
// reduce_options::reproducible must return these bits on every device and backend. Compile the
// calling TU without FMA contraction (only additions occur, so no contraction is possible anyway).
// A NaN total is the canonical quiet NaN (ops::canonical_nan), as on every device.
#pragma once
#include <pk/reduction/detail/reduce_ops.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <cstdint>
#include <vector>

namespace pk::reduction::reference {

namespace detail {
//! Binary tree over v[first, first + 256) with +0 past `count` (adjacent pairs first).
template <class T>
T tree256(const std::vector<T>& v, std::int64_t first, std::int64_t count) {
  std::vector<T> level(256);
  for (std::int64_t i = 0; i < 256; ++i) level[static_cast<std::size_t>(i)] = first + i < count ? v[static_cast<std::size_t>(first + i)] : T(0);
  for (std::size_t w = 256; w > 1; w /= 2)
    for (std::size_t i = 0; i < w / 2; ++i) level[i] = level[2 * i] + level[2 * i + 1];
  return level[0];
}
}  // namespace detail

//! The reproducible sum of x[0, n) (T = float or double), in the layout's fixed order.
template <class T>
T reproducible_sum(const T* x, std::int64_t n) {
  using layout = reproducible_layout;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const std::int64_t chunk = layout::chunk_elems(sizeof(T));
  const std::int64_t m = (n + chunk - 1) / chunk;
  if (m == 0) return T(0);
  std::vector<T> chunks(static_cast<std::size_t>(m));
  for (std::int64_t c = 0; c < m; ++c) {
    T leaves[layout::chunk_leaves];
    for (int lane = 0; lane < layout::chunk_leaves; ++lane) {
      T leaf = T(0);
      for (int k = 0; k < layout::leaf_vectors; ++k)
        for (int e = 0; e < V; ++e) {
          const std::int64_t i = c * chunk + (std::int64_t{k} * layout::chunk_leaves + lane) * V + e;
          leaf = leaf + (i < n ? x[i] : T(0));
        }
      leaves[lane] = leaf;
    }
    for (int w = layout::chunk_leaves; w > 1; w /= 2)
      for (int i = 0; i < w / 2; ++i) leaves[i] = leaves[2 * i] + leaves[2 * i + 1];
    chunks[static_cast<std::size_t>(c)] = leaves[0];
  }
  const std::int64_t groups = (m + layout::group_chunks - 1) / layout::group_chunks;
  std::vector<T> group_sums(static_cast<std::size_t>(groups));
  for (std::int64_t g = 0; g < groups; ++g)
    group_sums[static_cast<std::size_t>(g)] = detail::tree256(chunks, g * layout::group_chunks, m);
  const std::int64_t l1 = (groups + layout::top_fanout - 1) / layout::top_fanout;
  std::vector<T> level1(static_cast<std::size_t>(l1));
  for (std::int64_t i = 0; i < l1; ++i)
    level1[static_cast<std::size_t>(i)] = detail::tree256(group_sums, i * layout::top_fanout, groups);
  const T total = detail::tree256(level1, 0, l1);
  return total != total ? ops::canonical_nan<T>() : total;
}

}  // namespace pk::reduction::reference
