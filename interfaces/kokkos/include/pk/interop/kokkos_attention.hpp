// Kokkos adapter, attention: pk::attention_forward on Kokkos views of [batch, seqlen, heads, head_dim]
// (any layout whose last dimension is contiguous: the strides come from the views) and an execution
// space instance (pk/interop/kokkos_core.hpp: which pk stream a space maps to).
//
//   Kokkos::View<pk::bf16****, Kokkos::LayoutRight> q("q", b, s, h, d), k(...), v(...), o(...);
//   pk::attention_args opts;  opts.causal = true;          // tensor fields of opts are ignored
//   if (auto st = pk::interop::attention_forward(space, q, k, v, o, opts); !st) std::cerr << st.to_string();
#pragma once
#include <pk/attention/attention.hpp>
#include <pk/interop/kokkos_core.hpp>
#include <pk/portable/numeric.hpp>

namespace pk::interop {

namespace detail {
template <class T>
inline constexpr bool is_attention_type =
    std::is_same_v<T, pk::bf16> || std::is_same_v<T, pk::fp16> || std::is_same_v<T, float>;

template <class T>
constexpr pk::dtype attention_dtype() {
  if constexpr (std::is_same_v<T, pk::bf16>) return pk::dtype::bf16;
  else if constexpr (std::is_same_v<T, pk::fp16>) return pk::dtype::f16;
  else return pk::dtype::f32;
}

//! A rank-4 view as the attention family's 4-D tensor view.
template <class View>
pk::tensor_view attention_view(const View& v) {
  static_assert(View::rank == 4, "pk::interop::attention_forward: views must have rank 4 [batch, seqlen, heads, head_dim]");
  using T = typename View::non_const_value_type;
  static_assert(is_attention_type<T>, "pk::interop::attention_forward: views must hold pk::bf16, pk::fp16 or float");
  const auto d = describe(v);
  pk::tensor_view t;
  t.data = d.data;
  t.type = attention_dtype<T>();
  t.rank = 4;
  for (std::size_t k = 0; k < 4; ++k) {
    t.shape[k] = d.extents[k];
    t.stride[k] = d.strides[k];
  }
  return t;
}
}  // namespace detail

//! pk::attention_forward with q, k, v, out taken from Kokkos views (out: non-const, q's value type) and
//! every other argument (causal, softmax_scale, windows, lse, variable-length offsets) from `opts`.
template <class ExecSpace, class Q, class K, class V, class O>
  requires Kokkos::is_execution_space<ExecSpace>::value && Kokkos::is_view<Q>::value && Kokkos::is_view<K>::value &&
           Kokkos::is_view<V>::value && Kokkos::is_view<O>::value
status attention_forward(const ExecSpace& space, const Q& q, const K& k, const V& v, const O& out,
                         const attention_args& opts = {}, std::string_view host_device = {}) {
  static_assert(std::is_same_v<typename O::value_type, typename Q::non_const_value_type>,
                "pk::interop::attention_forward: `out` must be a non-const view of q's value type");
  static_assert(detail::accessible_from<ExecSpace, Q> && detail::accessible_from<ExecSpace, K> &&
                    detail::accessible_from<ExecSpace, V> && detail::accessible_from<ExecSpace, O>,
                "pk::interop::attention_forward: the views must be accessible from the execution space");
  attention_args a = opts;
  a.q = detail::attention_view(q);
  a.k = detail::attention_view(k);
  a.v = detail::attention_view(v);
  a.out = detail::attention_view(out);
  stream s;
  PK_TRY(make_stream(space, s, host_device));
  detail::order_before(space);
  return pk::attention_forward(s, a);
}

}  // namespace pk::interop
