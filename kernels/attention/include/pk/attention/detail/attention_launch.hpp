// Attention forward, launch code compiled once per target: picks the compiled instance of the planned
// policy and launches it. Each instance TU (generated from the instance table in kernels/attention/CMakeLists.txt)
#pragma once
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/detail/attention_agent.hpp>
#include <pk/attention/detail/attention_call.hpp>
#include <pk/attention/detail/attention_ws.hpp>
#include <pk/portable/launch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! The candidate list this target compiles: the vendor's tiled policies (one fat binary spans the
//! vendor's archs), after the warp-specialized ones where this target has them (attention::ws_compiled).
inline constexpr attention::family attention_family = attention::family_of(vendor_of(this_target));
inline constexpr bool attention_ws = attention::ws_compiled(this_target);

//! The tensor map of a rank-4 [batch, token, head, head_dim] view (strides in elements; a dimension of
//! extent 1 may have any stride, the copy engine needs a valid one) loaded as `Tile` panels.
template <class T, class Tile>
status attn_tma_map(const void* data, std::int64_t tokens, std::int64_t heads, std::int64_t batch, std::int64_t s_row,
                    std::int64_t s_head, std::int64_t s_batch, int head_dim, tma_map& out) {
  constexpr std::uint64_t eb = sizeof(T);
  if (tokens <= 0 || heads <= 0 || batch <= 0) {
    // An empty tensor (varlen: no key of any sequence) is never loaded: no item has a key tile. The copy
    // engine rejects zero extents, so it gets no map.
    out = tma_map{};
    return {};
  }
  tma_desc d;
  d.base = data;
  d.rank = 4;
  d.elem_bytes = static_cast<int>(eb);
  d.bf16 = std::is_same_v<T, bf16>;
  d.mode = Tile::mode;
  const std::uint64_t row = tokens > 1 ? static_cast<std::uint64_t>(s_row) * eb : static_cast<std::uint64_t>(head_dim) * eb;
  const std::uint64_t head = heads > 1 ? static_cast<std::uint64_t>(s_head) * eb : row * static_cast<std::uint64_t>(tokens);
  const std::uint64_t bat = batch > 1 ? static_cast<std::uint64_t>(s_batch) * eb : head * static_cast<std::uint64_t>(heads);
  const std::uint64_t dims[4] = {static_cast<std::uint64_t>(head_dim), static_cast<std::uint64_t>(tokens),
                                 static_cast<std::uint64_t>(heads), static_cast<std::uint64_t>(batch)};
  const std::uint64_t strides[4] = {eb, row, head, bat};
  const std::uint32_t box[4] = {static_cast<std::uint32_t>(Tile::box_cols), static_cast<std::uint32_t>(Tile::box_rows), 1, 1};
  for (int i = 0; i < 4; ++i) {
    d.dims[i] = dims[i];
    d.strides[i] = strides[i];
    d.box[i] = box[i];
  }
  return make_tma_map(d, out);
}

template <class T, int D, attention::policy Pol>
status attn_fwd_launch_ws(const attention::fwd_call& c, const char* name) {
  using layout = attn_ws::smem_layout<T, D, Pol.block_m, Pol.block_n, Pol.stages, Pol.persistent>;
  const attention::fwd_params& p = c.p;
  ws_params wp;
  wp.p = p;
  using q_tile = typename layout::q_tile;
  using kv_tile = typename layout::kv_tile;
  PK_TRY((attn_tma_map<T, q_tile>(p.q, c.q_tokens, c.heads_q, c.batch_q, p.q_row, p.q_head, p.q_batch, D, wp.q)));
  PK_TRY((attn_tma_map<T, kv_tile>(p.k, c.k_tokens, c.heads_kv, c.batch_q, p.k_row, p.k_head, p.k_batch, D, wp.k)));
  PK_TRY((attn_tma_map<T, kv_tile>(p.v, c.k_tokens, c.heads_kv, c.batch_q, p.v_row, p.v_head, p.v_batch, D, wp.v)));
  // The work items (query blocks x heads x batch entries); one block each, or, persistent, one block per
  // SM (the kernel's registers and shared memory hold one block per SM) walking them.
  wp.m_blocks = static_cast<int>(c.grid_x);
  wp.heads = static_cast<int>(c.grid_y);
  wp.batch = static_cast<int>(c.grid_z);
  const std::int64_t items = std::int64_t{c.grid_x} * c.grid_y * c.grid_z;
  const std::int64_t sms = std::max(1, c.s->device().sm_count);
  // The kernel counts items and rounds in int: the last round's items reach items + grid - 1.
  if (items > std::numeric_limits<int>::max() - sms)
    return unsupported(std::string(name) + ": " + std::to_string(items) +
                       " work items (query blocks x heads x batch) exceed 2^31 - 1 - the SM count (a grid's blocks, "
                       "and the kernel's item count)");
  wp.items = static_cast<int>(items);
  const std::int64_t blocks = Pol.persistent ? std::min(items, sms) : items;
  launch_shape shape;
  shape.grid_x = static_cast<unsigned>(blocks);
  shape.block_x = static_cast<unsigned>(Pol.block_threads);
  shape.dynamic_smem = static_cast<std::size_t>(attention::ws_smem_bytes(Pol, D, sizeof(T)));
  shape.name = name;
  return launch(*c.s, &attn_fwd_ws_kernel<T, D, Pol.block_m, Pol.block_n, Pol.stages, Pol.persistent>, shape, wp);
}

template <class T>
constexpr const char* attention_type_name() {
  return std::is_same_v<T, bf16> ? "bf16" : "f16";
}

template <class T, int D, attention::policy Pol>
status attn_fwd_launch_tiled(const attention::fwd_call& c, const char* name) {
  launch_shape shape;
  shape.grid_x = c.grid_x;
  shape.grid_y = c.grid_y;
  shape.grid_z = c.grid_z;
  shape.block_x = static_cast<unsigned>(Pol.block_threads);
  shape.dynamic_smem = static_cast<std::size_t>(attention::smem_bytes(Pol, D, sizeof(T), attention::stages_p(attention_family)));
  shape.name = name;
  return launch(*c.s, &attn_fwd_kernel<T, D, Pol.block_m, Pol.block_n, Pol.block_threads, Pol.stages>, shape, c.p);
}

template <class T, int D, std::size_t I>
status attn_fwd_launch_policy(const attention::fwd_call& c) {
  constexpr attention::policy pol = attention::candidates(attention_family, attention_ws, D)[I];
  static const std::string name = attention::name_of(pol, attention_type_name<T>(), D);
  if constexpr (pol.strat == attention::strategy::ws_wgmma_tma)
    return attn_fwd_launch_ws<T, D, pol>(c, name.c_str());
  else
    return attn_fwd_launch_tiled<T, D, pol>(c, name.c_str());
}

template <class T, int D, std::size_t... I>
status attn_fwd_launch_indexed(const attention::fwd_call& c, std::index_sequence<I...>) {
  status s = unsupported("attention_forward: policy index " + std::to_string(c.policy) + " is not compiled");
  ((c.policy == static_cast<int>(I) ? (void)(s = attn_fwd_launch_policy<T, D, I>(c)) : (void)0), ...);
  return s;
}

template <class T, int D>
status attn_fwd_launch(const attention::fwd_call& c) {
  return attn_fwd_launch_indexed<T, D>(c, std::make_index_sequence<attention::candidate_count(attention_family, attention_ws, D)>{});
}

}  // namespace impl
PK_DETAIL_TARGET_END

//! Defines the instance entry point `fn` (attn_fwd_<type>_d<D>) of this target: one per instance TU,
//! generated from the instance table in kernels/attention/CMakeLists.txt.
#define PK_ATTENTION_INSTANCE(fn, type, T, D)                                 \
  PK_DETAIL_TARGET_BEGIN                                                      \
  namespace impl {                                                            \
  status fn(const attention::fwd_call& c) { return attn_fwd_launch<T, D>(c); } \
  }                                                                           \
  PK_DETAIL_TARGET_END
