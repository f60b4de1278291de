// Reductions, launch code compiled once per target: maps a type-erased call onto the compiled instance
// of its planned policy. Each instance file (src/reduce_<dtype>.cpp, src/rows_<dtype>.cpp) includes
// this header and instantiates run_reduce<T> / run_rows<T> for one element type.
#pragma once
#include <pk/portable/launch.hpp>
#include <pk/reduction/detail/reduce_agent.hpp>
#include <pk/reduction/detail/reduce_call.hpp>
#include <pk/reduction/detail/reduce_ops.hpp>
#include <pk/reduction/detail/repro_agent.hpp>
#include <pk/reduction/detail/rows_agent.hpp>
#include <pk/reduction/detail/segment_agent.hpp>
#include <pk/reduction/detail/split_agent.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <string>
#include <type_traits>
#include <utility>

PK_DETAIL_TARGET_BEGIN
namespace impl {

inline std::string instance_name(std::string policy, const char* what, const char* type) {
  return policy + "_" + what + "_" + type;
}

//! The launch shape of a reduction kernel named `name` (which must outlive the launch). The reduction
//! tables are PLAIN (kernels/reduction/CMakeLists.txt): this target's code serves its plain targets too.
inline launch_shape reduction_shape(unsigned grid, int block_threads, const std::string& name) {
  launch_shape shape;
  shape.grid_x = grid;
  shape.block_x = static_cast<unsigned>(block_threads);
  shape.name = name.c_str();
  shape.plain = true;
  return shape;
}

template <std::size_t I, class T, class Acc, class Out, class Op, class Load, class Fin>
status launch_device_policy(const reduce_call& c, const char* what, Op op, Acc identity, Load load, Fin fin) {
  constexpr reduction::reduce_policy p = reduction::reduce_candidates[I];
  constexpr int items = reduction::scaled_items(p, sizeof(T));
  constexpr int vec = reduction::scaled_vector(p, sizeof(T));
  const std::string name = instance_name(reduction::name_of(p), what, c.type_name);
  const launch_shape shape = reduction_shape(c.grid, p.block_threads, name);
  return launch(*c.s, &reduce_single_pass_kernel<p.block_threads, items, vec, T, Acc, Out, Op, Load, Fin>, shape,
                static_cast<const T*>(c.in), c.n, static_cast<Out*>(c.out),
                reduce_workspace<Acc>{static_cast<Acc*>(c.partials), c.ticket}, op, identity, load, fin);
}

template <std::size_t I, class T, class Acc, class Out, class Op, class Load, class Fin>
status launch_segment_policy(const reduce_call& c, const char* what, Op op, Acc identity, Load load, Fin fin) {
  constexpr reduction::segment_policy p = reduction::segment_candidates[I];
  const std::string name = instance_name(reduction::name_of(p), what, c.type_name);
  const launch_shape shape = reduction_shape(c.grid, p.block_threads, name);
  return launch(*c.s, &segment_reduce_kernel<p.block_threads, p.group_threads, p.unroll, T, Acc, Out, Op, Load, Fin>,
                shape, static_cast<const T*>(c.in), static_cast<Out*>(c.out), c.map, c.n, op, identity, load, fin);
}

template <std::size_t I, class T, class Acc, class Out, class Op, class Load, class Fin>
status launch_split_policy(const reduce_call& c, const char* what, Op op, Acc identity, Load load, Fin fin) {
  constexpr reduction::split_policy p = reduction::split_candidates[I];
  const std::string name = instance_name(reduction::name_of(p), what, c.type_name);
  const launch_shape shape = reduction_shape(c.grid, p.block_threads, name);
  constexpr int unroll = reduction::split_unroll(p, sizeof(T));
  return launch(*c.s, &segment_split_kernel<p.block_threads, unroll, p.blocks_per_sm, T, Acc, Out, Op, Load, Fin>, shape,
                static_cast<const T*>(c.in), static_cast<Out*>(c.out), c.map.offsets, c.n,
                split_workspace<Acc>{static_cast<Acc*>(c.partials), static_cast<Acc*>(c.partials2), c.ticket}, op,
                identity, load, fin);
}

//! Threads per block of the one-thread-per-output kernel (a whole number of warps everywhere).
inline constexpr int strided_block_threads = 256;

template <class T, class Acc, class Out, class Op, class Load, class Fin, std::size_t... D, std::size_t... S,
          std::size_t... P>
status launch_kinds(const reduce_call& c, const char* what, Op op, Acc identity, Load load, Fin fin,
                    std::index_sequence<D...>, std::index_sequence<S...>, std::index_sequence<P...>) {
  status s = unsupported("reduction: policy index " + std::to_string(c.policy) + " is not compiled");
  switch (c.kind) {
    case reduction::call_kind::device:
    case reduction::call_kind::mean_var:
      ((c.policy == static_cast<int>(D)
            ? (void)(s = launch_device_policy<D, T, Acc, Out>(c, what, op, identity, load, fin))
            : (void)0),
       ...);
      return s;
    case reduction::call_kind::segments:
      ((c.policy == static_cast<int>(S)
            ? (void)(s = launch_segment_policy<S, T, Acc, Out>(c, what, op, identity, load, fin))
            : (void)0),
       ...);
      return s;
    case reduction::call_kind::split:
      if constexpr (std::is_same_v<Op, reduction::ops::welford_op>) {
        return s;  // mean/variance has no segmented form (not compiled)
      } else {
        ((c.policy == static_cast<int>(P)
              ? (void)(s = launch_split_policy<P, T, Acc, Out>(c, what, op, identity, load, fin))
              : (void)0),
         ...);
        return s;
      }
    case reduction::call_kind::strided: {
      const std::string name = instance_name("strided_b" + std::to_string(strided_block_threads), what, c.type_name);
      const launch_shape shape = reduction_shape(c.grid, strided_block_threads, name);
      return launch(*c.s, &strided_reduce_kernel<strided_block_threads, T, Acc, Out, Op, Load, Fin>, shape,
                    static_cast<const T*>(c.in), static_cast<Out*>(c.out), c.map, c.n, op, identity, load, fin);
    }
  }
  return s;
}

template <class T, class Acc, class Out, class Op, class Load, class Fin>
status launch_reduction(const reduce_call& c, const char* what, Op op, Acc identity, Load load, Fin fin) {
  return launch_kinds<T, Acc, Out>(c, what, op, identity, load, fin,
                                   std::make_index_sequence<reduction::reduce_candidates.size()>{},
                                   std::make_index_sequence<reduction::segment_candidates.size()>{},
                                   std::make_index_sequence<reduction::split_candidates.size()>{});
}

//! Writes the mean through the kernel's output pointer and the variance through `var`; `w` is the
//! state of x - pivot[0] (pivot: the input, read only when it is not empty).
template <class A, class T>
struct to_mean_and_var {
  std::int64_t correction;
  A* var;
  const T* pivot;
  PK_DEVICE A operator()(const reduction::ops::welford<A>& w) const {
    const A k = w.n > 0 ? ::pk::widen<A>(*pivot) : A(0);
    const reduction::ops::mean_var<A> r = reduction::ops::to_mean_var<A>{correction}(w, k);
    *var = r.var;
    return r.mean;
  }
};

//! Every built-in reduction of element type T (sum/prod only for types that have them).
template <class T>
status run_reduce(const reduce_call& c) {
  namespace ops = reduction::ops;
  using A = ops::accum_t<T>;
  using id = ops::identities<T>;
  constexpr bool arithmetic = !std::is_same_v<T, std::int8_t> && !std::is_same_v<T, std::uint8_t>;
  if (c.kind == reduction::call_kind::mean_var) {
    if constexpr (numeric_traits<T>::is_floating) {
      return launch_reduction<T, ops::welford<A>, A>(c, "mean_var", ops::welford_op{}, ops::welford<A>{0, A(0), A(0)},
                                                     ops::welford_load<A, T>{static_cast<const T*>(c.in)},
                                                     to_mean_and_var<A, T>{c.correction, static_cast<A*>(c.out2),
                                                                           static_cast<const T*>(c.in)});
    } else {
      return unsupported("reduce_mean_var: integer input is not supported");
    }
  }
  switch (c.op) {
    case reduction::op_code::sum:
      if constexpr (arithmetic) return launch_reduction<T, A, T>(c, "sum", ops::sum_op{}, id::sum(), ops::value_load<A>{}, ops::to_value<T>{});
      break;
    case reduction::op_code::prod:
      if constexpr (arithmetic) return launch_reduction<T, A, T>(c, "prod", ops::prod_op{}, id::prod(), ops::value_load<A>{}, ops::to_value<T>{});
      break;
    case reduction::op_code::min:
      return launch_reduction<T, A, T>(c, "min", ops::min_op{}, id::min(), ops::value_load<A>{}, ops::to_value<T>{});
    case reduction::op_code::max:
      return launch_reduction<T, A, T>(c, "max", ops::max_op{}, id::max(), ops::value_load<A>{}, ops::to_value<T>{});
    case reduction::op_code::argmin:
      return launch_reduction<T, ops::indexed<A>, std::int64_t>(c, "argmin", ops::arg_op<false>{},
                                                                ops::indexed<A>{id::min(), ops::no_index},
                                                                ops::indexed_load<A>{}, ops::to_index{});
    case reduction::op_code::argmax:
      return launch_reduction<T, ops::indexed<A>, std::int64_t>(c, "argmax", ops::arg_op<true>{},
                                                                ops::indexed<A>{id::max(), ops::no_index},
                                                                ops::indexed_load<A>{}, ops::to_index{});
  }
  return unsupported(std::string("reduce: this operation is not defined for ") + c.type_name);
}

template <std::size_t I, class T>
status launch_repro_policy(const repro_call& c) {
  constexpr int b = reduction::reproducible_candidates[I];
  const std::string name = reduction::reproducible_name(b) + "_" + c.type_name;
  const launch_shape shape = reduction_shape(c.grid, b, name);
  return launch(*c.s, &repro_sum_kernel<b, T>, shape, static_cast<const T*>(c.in), c.n, static_cast<T*>(c.out),
                c.group_tickets, c.top_ticket, static_cast<T*>(c.chunk_sums), static_cast<T*>(c.group_sums));
}
template <class T, std::size_t... I>
status run_repro_indexed(const repro_call& c, std::index_sequence<I...>) {
  status s = unsupported("reduce: reproducible policy index " + std::to_string(c.policy) + " is not compiled");
  ((c.policy == static_cast<int>(I) ? (void)(s = launch_repro_policy<I, T>(c)) : (void)0), ...);
  return s;
}
//! The reproducible sum of fp32 or fp64.
template <class T>
status run_repro(const repro_call& c) {
  return run_repro_indexed<T>(c, std::make_index_sequence<reduction::reproducible_candidates.size()>{});
}

template <std::size_t I, class T, reduction::row_kind K>
status launch_rows_policy(const rows_call& c, const char* what) {
  using A = reduction::ops::accum_t<T>;
  constexpr reduction::row_policy p = reduction::row_candidates[I];
  const std::string name = instance_name(reduction::name_of(p), what, c.type_name);
  launch_shape shape = reduction_shape(c.grid, p.block_threads, name);
  constexpr int vectors = reduction::row_vectors(p, static_cast<int>(sizeof(T)));
  if constexpr (reduction::on_chip(p)) {
    // The planner never picks an on-chip policy for a wider row (its kernel would not see the rest).
    if (c.cols > reduction::row_capacity(p, static_cast<int>(sizeof(T))))
      return {errc::internal, name + ": a row of " + std::to_string(c.cols) + " elements exceeds the policy's capacity"};
    if constexpr (!reduction::row_compiled(p, static_cast<int>(sizeof(T)), backend_has_async_copy)) {
      return unsupported(name + ": staged rows are compiled for 16-bit elements on targets with asynchronous copies only");
    } else {
      shape.dynamic_smem = static_cast<std::size_t>(reduction::row_stage_bytes(p, static_cast<int>(sizeof(T))));
      constexpr int stages = reduction::staged(p) ? p.stages : 0;
      return launch(*c.s, &rows_onchip_kernel<p.block_threads, p.group_threads, vectors, stages, T, A, K>, shape, c);
    }
  } else {
    if (c.cache_vectors > 0) {
      if constexpr (reduction::row_cacheable(p, K == reduction::row_kind::layer_norm || K == reduction::row_kind::mean_var)) {
        shape.dynamic_smem = static_cast<std::size_t>(c.cache_vectors * 16);
        return launch(*c.s, &rows_stream_kernel<p.block_threads, p.group_threads, vectors, T, A, K, true>, shape, c);
      } else {
        return {errc::internal, name + ": no instance keeps this operation's rows in shared memory"};
      }
    }
    return launch(*c.s, &rows_stream_kernel<p.block_threads, p.group_threads, vectors, T, A, K>, shape, c);
  }
}
template <class T, reduction::row_kind K, std::size_t... I>
status run_rows_kind(const rows_call& c, const char* what, std::index_sequence<I...>) {
  status s = unsupported("rows: policy index " + std::to_string(c.policy) + " is not compiled");
  ((c.policy == static_cast<int>(I) ? (void)(s = launch_rows_policy<I, T, K>(c, what)) : (void)0), ...);
  return s;
}
//! Softmax, log_softmax, layer_norm, rms_norm and row mean/variance for element type T.
template <class T>
status run_rows(const rows_call& c) {
  using reduction::row_kind;
  constexpr auto seq = std::make_index_sequence<reduction::row_candidates.size()>{};
  switch (c.kind) {
    case row_kind::softmax: return run_rows_kind<T, row_kind::softmax>(c, "softmax", seq);
    case row_kind::log_softmax: return run_rows_kind<T, row_kind::log_softmax>(c, "log_softmax", seq);
    case row_kind::layer_norm: return run_rows_kind<T, row_kind::layer_norm>(c, "layer_norm", seq);
    case row_kind::rms_norm: return run_rows_kind<T, row_kind::rms_norm>(c, "rms_norm", seq);
    case row_kind::mean_var: return run_rows_kind<T, row_kind::mean_var>(c, "mean_var", seq);
  }
  return unsupported("rows: unknown operation");
}

}  // namespace impl
PK_DETAIL_TARGET_END

//! The instance entry points, one per generated TU (the instance tables in kernels/reduction/CMakeLists.txt):
//! reduce_<type> (device-wide, segmented, along an axis, mean/variance), rows_<type> (softmax, norms,
//! row statistics) and repro_<type> (the reproducible sum, compiled without contraction).
#define PK_REDUCE_INSTANCE(fn, type, T)                                 \
  PK_DETAIL_TARGET_BEGIN                                                \
  namespace impl {                                                      \
  status fn(const reduce_call& c) { return run_reduce<T>(c); }          \
  }                                                                     \
  PK_DETAIL_TARGET_END
#define PK_ROWS_INSTANCE(fn, type, T)                                   \
  PK_DETAIL_TARGET_BEGIN                                                \
  namespace impl {                                                      \
  status fn(const rows_call& c) { return run_rows<T>(c); }              \
  }                                                                     \
  PK_DETAIL_TARGET_END
#define PK_REPRO_INSTANCE(fn, type, T)                                  \
  PK_DETAIL_TARGET_BEGIN                                                \
  namespace impl {                                                      \
  status fn(const repro_call& c) { return run_repro<T>(c); }            \
  }                                                                     \
  PK_DETAIL_TARGET_END
