// Kokkos adapter, reductions: pk entry points taking Kokkos::View and an execution-space instance
// (pk/interop/kokkos_core.hpp: which pk stream a space maps to). The raw pointer, extents and strides
// come from the views:
//
//   Kokkos::View<float*> x("x", n);              Kokkos::View<float> total("total");
//   Kokkos::DefaultExecutionSpace space;
//   if (auto st = pk::interop::reduce_sum(space, x, total); !st) std::cerr << st.to_string();
//   Kokkos::View<float**, Kokkos::LayoutLeft> m("m", rows, cols);  Kokkos::View<float*> col_max("c", cols);
//   pk::interop::reduce_axis(space, pk::reduce_op::max, m, 0, col_max);   // strides taken from the view
#pragma once
#include <pk/interop/kokkos_core.hpp>
#include <pk/reduction/reduce.hpp>

namespace pk::interop {

namespace detail {
//! A view as the reduction family's strided descriptor (rank 0..4).
template <class View>
status to_tensor_view(const char* where, const View& v, tensor_view& out) {
  const auto d = describe(v);
  if (d.rank > tensor_view::max_rank)
    return invalid_argument(std::string(where) + ": rank " + std::to_string(d.rank) + ": must be <= " +
                            std::to_string(tensor_view::max_rank));
  out.data = d.data;
  out.type = reduction::dtype_of<typename View::non_const_value_type>;
  out.rank = d.rank;
  for (int k = 0; k < d.rank; ++k) {
    out.shape[k] = d.extents[static_cast<std::size_t>(k)];
    out.stride[k] = d.strides[static_cast<std::size_t>(k)];
  }
  return {};
}
}  // namespace detail

//! pk::reduce over Kokkos views: `in` contiguous (any rank) of a pk reduction type (double, float,
//! pk::fp16, pk::bf16, int32/64, int8, uint8); `out` one element (rank 0, or rank 1 of extent 1) of in's
//! type, or std::int64_t for argmin/argmax. Both must be accessible from `space`.
template <class ExecSpace, class InView, class OutView>
  requires Kokkos::is_execution_space<ExecSpace>::value && Kokkos::is_view<InView>::value &&
           Kokkos::is_view<OutView>::value
status reduce(const ExecSpace& space, reduce_op op, const InView& in, const OutView& out, const reduce_options& opt = {},
              std::string_view host_device = {}) {
  using T = typename InView::non_const_value_type;
  using O = typename OutView::value_type;
  static_assert(std::is_same_v<O, T> || std::is_same_v<O, std::int64_t>,
                "pk::interop::reduce: `out` must be a non-const view of in's value type (std::int64_t for argmin/argmax)");
  static_assert(detail::accessible_from<ExecSpace, InView> && detail::accessible_from<ExecSpace, OutView>,
                "pk::interop::reduce: the views must be accessible from the execution space");
  const bool index_op = op == reduce_op::argmin || op == reduce_op::argmax;
  if (index_op && !std::is_same_v<O, std::int64_t>)
    return invalid_argument("pk::interop::reduce: out: argmin/argmax write an std::int64_t index");
  if (!index_op && !std::is_same_v<O, T>) return invalid_argument("pk::interop::reduce: out: must hold in's value type");
  const auto src = describe(in);
  const auto dst = describe(out);
  if (!src.contiguous) return invalid_argument("pk::interop::reduce: in: the view must be contiguous (span_is_contiguous())");
  if (dst.size() != 1 || dst.rank > 1)
    return invalid_argument("pk::interop::reduce: out: must hold one element (rank 0, or rank 1 of extent 1); has " +
                            std::to_string(dst.size()) + " elements, rank " + std::to_string(dst.rank));
  stream s;
  PK_TRY(make_stream(space, s, host_device));
  detail::order_before(space);
  return pk::reduce(s, op, reduction::dtype_of<T>, src.data, src.size(), dst.data, opt);
}

//! pk::reduce with reduce_op::sum.
template <class ExecSpace, class InView, class OutView>
status reduce_sum(const ExecSpace& space, const InView& in, const OutView& out, std::string_view host_device = {}) {
  return reduce(space, reduce_op::sum, in, out, {}, host_device);
}

//! pk::reduce_axis over Kokkos views of any layout (the strides come from the views): `out` has in's
//! extents without `axis` and in's value type (std::int64_t for argmin/argmax).
template <class ExecSpace, class InView, class OutView>
  requires Kokkos::is_execution_space<ExecSpace>::value && Kokkos::is_view<InView>::value &&
           Kokkos::is_view<OutView>::value
status reduce_axis(const ExecSpace& space, reduce_op op, const InView& in, int axis, const OutView& out,
                   const reduce_options& opt = {}, std::string_view host_device = {}) {
  static_assert(detail::accessible_from<ExecSpace, InView> && detail::accessible_from<ExecSpace, OutView>,
                "pk::interop::reduce_axis: the views must be accessible from the execution space");
  tensor_view vin, vout;
  PK_TRY(detail::to_tensor_view("pk::interop::reduce_axis: in", in, vin));
  PK_TRY(detail::to_tensor_view("pk::interop::reduce_axis: out", out, vout));
  stream s;
  PK_TRY(make_stream(space, s, host_device));
  detail::order_before(space);
  return pk::reduce_axis(s, op, vin, axis, vout, opt);
}

}  // namespace pk::interop
