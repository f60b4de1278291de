// Attention forward, launch code compiled once per target: picks the compiled instance of the planned
// policy and launches it. Each instance TU (generated from the instance table in kernels/attention/CMakeLists.txt)
#pragma once
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/detail/attention_agent.hpp>
#include <pk/attention/detail/attention_call.hpp>
#include <pk/portable/launch.hpp>

#include <string>
#include <utility>

PK_DETAIL_TARGET_BEGIN
namespace impl {

//! The candidate list this target compiles (by vendor: one fat binary spans the vendor's archs).
inline constexpr attention::family attention_family = attention::family_of(vendor_of(this_target));

template <class T>
constexpr const char* attention_type_name() {
  return std::is_same_v<T, bf16> ? "bf16" : "f16";
}

template <class T, int D, std::size_t I>
status attn_fwd_launch_policy(const attention::fwd_call& c) {
  constexpr attention::policy pol = attention::candidates(attention_family, D)[I];
  static const std::string name = attention::name_of(pol, attention_type_name<T>(), D);
  launch_shape shape;
  shape.grid_x = c.grid_x;
  shape.grid_y = c.grid_y;
  shape.grid_z = c.grid_z;
  shape.block_x = static_cast<unsigned>(pol.block_threads);
  shape.dynamic_smem = static_cast<std::size_t>(
      attention::smem_bytes(pol, D, sizeof(T), attention::stages_p(attention_family)));
  shape.name = name.c_str();
  return launch(*c.s, &attn_fwd_kernel<T, D, pol.block_m, pol.block_n, pol.block_threads, pol.stages>, shape, c.p);
}

template <class T, int D, std::size_t... I>
status attn_fwd_launch_indexed(const attention::fwd_call& c, std::index_sequence<I...>) {
  status s = unsupported("attention_forward: policy index " + std::to_string(c.policy) + " is not compiled");
  ((c.policy == static_cast<int>(I) ? (void)(s = attn_fwd_launch_policy<T, D, I>(c)) : (void)0), ...);
  return s;
}

template <class T, int D>
status attn_fwd_launch(const attention::fwd_call& c) {
  return attn_fwd_launch_indexed<T, D>(c, std::make_index_sequence<attention::candidate_count(attention_family, D)>{});
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
