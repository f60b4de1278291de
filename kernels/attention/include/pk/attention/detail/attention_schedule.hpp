// Attention forward, the warp-specialized strategy's work order, host- and device-callable so that the
// planner (attention_api.cpp) follows the items the kernel (attention_ws.hpp) walks.
//
// A work item is one query block of one (head, batch entry). Items are numbered in the order blocks should
// start them: the (head, batch) entries in groups of l2_group whose K and V fit in L2 together, so that the
// blocks running at once re-read K/V from L2 rather than device memory; inside a group, query blocks
// longest first (under causal masking the last query blocks see the most keys), so that short items make
// the tail. A grid of one block per item starts them in that order; a persistent grid of G blocks deals
// them out in rounds of G, block j taking the j-th item of even rounds and the (G-1-j)-th of odd ones, so
// that a block that drew a long item in one round draws a short one in the next (items run longest first).
#pragma once
#include <pk/portable/macros.hpp>

#include <cstdint>

namespace pk::attention {

struct work_item {
  int mb, h, b;  //!< query block, head, batch entry
};

//! Item `lin` of m_blocks x heads x batch, in the order above.
PK_HOST_DEVICE constexpr work_item work_item_of(std::int64_t lin, int m_blocks, int heads, int batch, int l2_group) {
  const std::int64_t entries = std::int64_t{heads} * batch;
  const std::int64_t group = l2_group;
  const std::int64_t g = lin / (group * m_blocks);
  const std::int64_t in_group = (g + 1) * group <= entries ? group : entries - g * group;
  const std::int64_t r = lin - g * group * m_blocks;
  const std::int64_t entry = g * group + r % in_group;
  return {static_cast<int>(m_blocks - 1 - r / in_group), static_cast<int>(entry % heads), static_cast<int>(entry / heads)};
}

//! The item block `j` of a grid of `blocks` takes in round `k` (may be past the last item: skip it).
PK_HOST_DEVICE constexpr std::int64_t item_of_round(std::int64_t k, std::int64_t j, std::int64_t blocks) {
  return k * blocks + ((k & 1) != 0 ? blocks - 1 - j : j);
}

//! How many (head, batch) entries share L2: their K and V (of the longest sequence) take at most half of it,
//! leaving the rest to Q, O and other work; a multiple of `group`, the query heads that share one KV head.
constexpr int l2_group_of(std::int64_t l2_bytes, std::int64_t seqlen_k, int head_dim, int elem_bytes, int group,
                          std::int64_t entries) {
  const std::int64_t kv = 2 * seqlen_k * head_dim * std::int64_t{elem_bytes};
  const std::int64_t kv_bytes = kv > 1 ? kv : 1;
  const std::int64_t l2 = l2_bytes > 0 ? l2_bytes : kv_bytes;
  const std::int64_t g = l2 / 2 / kv_bytes * group;
  return static_cast<int>(g < 1 ? 1 : (g > entries ? entries : g));
}

}  // namespace pk::attention
