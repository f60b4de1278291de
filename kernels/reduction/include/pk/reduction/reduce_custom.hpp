// Device-wide reduction with a user-supplied operator: header-only, instantiated in the user's TU.
//
//   struct max_abs { PK_HOST_DEVICE float operator()(float a, float b) const { return fmaxf(fabsf(a), fabsf(b)); } };
//   pk::reduce_custom(s, x, n, out, max_abs{}, 0.0f);
//
// Requirements:
//  - The TU that includes this header is compiled for the stream's code target: by nvcc (a .cu file,
//    or LANGUAGE CUDA) for CUDA streams, by hipcc/clang -x hip for HIP streams, and with
//    -DPK_HOST_ARCH=<sm80|gfx942|gfx1100> for the host emulator impersonating that family
//    (pk_target_sources() in cmake/pk_targets.cmake compiles one source once per target of the build).
//    A stream of another target gets errc::unsupported naming both targets.
//  - `op` is a copyable function object callable on the device (PK_HOST_DEVICE operator(), or
//    __host__ __device__), associative and commutative: the single-pass kernel combines grid-strided
//    tiles, so the order of the elements is not kept. Deterministic run to run for a plan.
//  - T is trivially copyable with sizeof(T) a multiple of 4 bytes; `identity` is op's neutral element
//    (written for n == 0).
// Scratch memory comes from the stream's workspace, like pk::reduce.
#pragma once
#include <pk/archdb/family_plan.hpp>
#include <pk/reduction/detail/reduce_launch.hpp>
#include <pk/reduction/reduce.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

PK_DETAIL_TARGET_BEGIN

template <class T, class Op>
status reduce_custom(const stream& s, const T* in, std::int64_t n, T* out, Op op, T identity,
                     const reduce_options& opt = {}) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 4 == 0,
                "reduce_custom: T must be trivially copyable and a whole number of 4-byte words");
  if (!s.valid()) return invalid_argument("reduce_custom: stream: not initialized (use pk::default_stream)");
  if (s.code_target() != this_target)
    return unsupported(std::string("reduce_custom: stream: its code target is ") + to_string(s.code_target()) +
                       " but this translation unit was compiled for " + to_string(this_target) +
                       " (compile the TU for that target: see reduce_custom.hpp)");
  if (n < 0) return invalid_argument("reduce_custom: n = " + std::to_string(n) + ": must be >= 0");
  if (out == nullptr) return invalid_argument("reduce_custom: out: must not be null");
  if (in == nullptr && n > 0) return invalid_argument("reduce_custom: in: must not be null when n > 0");
  if (n > static_cast<std::int64_t>(PTRDIFF_MAX / sizeof(T)))
    return invalid_argument("reduce_custom: n = " + std::to_string(n) + ": " + std::to_string(n) + " elements of " +
                            std::to_string(sizeof(T)) + " bytes exceed the largest byte offset (2^63 - 1 bytes)");
  if (opt.reproducible) return unsupported("reduce_custom: options.reproducible: only the f32/f64 sums have it");
  const int eb = static_cast<int>(sizeof(T));
  const archdb::plan planned = reduction::plan_reduce(s.device(), n, eb);
  int index = 0;
  PK_TRY(archdb::select_policy(planned, opt.policy, "reduce_custom", index));
  const archdb::plan p = archdb::with_choice(planned, index);
  reduction::reduce_call c;
  c.s = &s;
  c.kind = reduction::call_kind::device;
  c.policy = p.index;
  c.grid = reduction::reduce_grid(s.device(), p, n, eb);
  c.in = in;
  c.n = n;
  c.out = out;
  c.type_name = "custom";
  void* ws = nullptr;
  void* scratch = nullptr;
  PK_TRY(detail::stream_workspace(s, sizeof(unsigned), &ws));
  PK_TRY(detail::stream_scratch(s, c.grid * sizeof(T), &scratch));
  c.ticket = static_cast<unsigned*>(ws);
  c.partials = static_cast<char*>(scratch);
  return impl::launch_reduction<T, T, T>(c, "user_op", op, identity, reduction::ops::value_load<T>{},
                                         reduction::ops::to_value<T>{});
}

PK_DETAIL_TARGET_END
