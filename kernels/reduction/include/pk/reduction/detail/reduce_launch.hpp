// Device-wide reduction, launch code compiled once per target: picks the compiled instance of the
// planned policy and launches it.
#pragma once
#include <pk/portable/launch.hpp>
#include <pk/reduction/detail/reduce_agent.hpp>
#include <pk/reduction/detail/reduce_call.hpp>

#include <string>
#include <utility>

PK_DETAIL_TARGET_BEGIN
namespace impl {

template <std::size_t I, class T, class Acc, class Op, class Load>
status reduce_launch_policy(const reduce_call& c, Op op, Acc identity, Load load) {
  constexpr reduction::reduce_policy p = reduction::reduce_candidates[I];
  constexpr int items = reduction::scaled_items(p, sizeof(T));
  constexpr int vec = reduction::scaled_vector(p, sizeof(T));
  static const std::string name = reduction::name_of(p) + "_" + c.type_name;
  launch_shape shape;
  shape.grid_x = c.grid;
  shape.block_x = static_cast<unsigned>(p.block_threads);
  shape.name = name.c_str();
  return launch(*c.s, &reduce_single_pass_kernel<p.block_threads, items, vec, T, Acc, Op, Load>, shape,
                static_cast<const T*>(c.in), c.n, static_cast<Acc*>(c.out),
                reduce_workspace<Acc>{static_cast<Acc*>(c.partials), c.ticket}, op, identity, load);
}

template <class T, class Acc, class Op, class Load, std::size_t... I>
status reduce_launch_indexed(const reduce_call& c, Op op, Acc identity, Load load, std::index_sequence<I...>) {
  status s = unsupported("reduction: policy index " + std::to_string(c.policy) + " is not compiled");
  ((c.policy == static_cast<int>(I) ? (void)(s = reduce_launch_policy<I, T>(c, op, identity, load)) : (void)0), ...);
  return s;
}

//! Launches the single-pass reduction with the compiled instance c.policy.
template <class T, class Acc, class Op, class Load>
status reduce_launch(const reduce_call& c, Op op, Acc identity, Load load) {
  return reduce_launch_indexed<T>(c, op, identity, load,
                                  std::make_index_sequence<reduction::reduce_candidates.size()>{});
}

}  // namespace impl
PK_DETAIL_TARGET_END
