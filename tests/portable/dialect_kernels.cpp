// Dialect test kernels: one source, compiled for every target of the build.
#include "dialect_kernels.hpp"

#include <pk/portable/block.hpp>
#include <pk/portable/launch.hpp>
#include <pk/portable/math.hpp>
#include <pk/portable/memory.hpp>

PK_DETAIL_TARGET_BEGIN
namespace test_impl {

using test::dialect_call;
using test::dialect_op;

//! A non-commutative associative operator: composition of affine maps x -> a*x + b (mod 2^32),
//! packed as (a << 32 | b); order errors change the result.
struct affine_compose {
  PK_HOST_DEVICE std::int64_t operator()(std::int64_t f, std::int64_t g) const {
    const std::uint32_t fa = static_cast<std::uint32_t>(static_cast<std::uint64_t>(f) >> 32), fb = static_cast<std::uint32_t>(f);
    const std::uint32_t ga = static_cast<std::uint32_t>(static_cast<std::uint64_t>(g) >> 32), gb = static_cast<std::uint32_t>(g);
    // (g o f)(x) = ga*(fa*x + fb) + gb: "apply f, then g" — the left operand comes first.
    const std::uint32_t a = ga * fa, b = ga * fb + gb;
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(a) << 32) | b);
  }
};

template <int W>
PK_DEVICE std::int64_t warp_op(dialect_op op, std::int64_t v, int arg) {
  using w = warp<W>;
  switch (op) {
    case dialect_op::shfl_idx: return w::shfl(v, (w::lane() * arg + 1));
    case dialect_op::shfl_up: return w::shfl_up(v, arg);
    case dialect_op::shfl_down: return w::shfl_down(v, arg);
    case dialect_op::shfl_xor: return w::shfl_xor(v, arg);
    case dialect_op::ballot: return static_cast<std::int64_t>(w::ballot((v & 1) != 0));
    case dialect_op::any: return w::any((v & 1) != 0) ? 1 : 0;
    case dialect_op::all: return w::all((v & 1) != 0) ? 1 : 0;
    case dialect_op::reduce: return w::reduce(v, plus{});
    case dialect_op::reduce_order: return w::reduce(v, affine_compose{});
    default: return -1;
  }
}

template <int W>
PK_KERNEL void warp_kernel(dialect_op op, int arg, const std::int64_t* in, std::int64_t* out) {
  const std::int64_t g = std::int64_t{block_idx().x} * block_dim().x + thread_rank();
  out[g] = warp_op<W>(op, in[g], arg);
}

template <int Threads>
PK_KERNEL void block_kernel(dialect_op op, int arg, const std::int64_t* in, std::int64_t* out) {
  const int t = thread_rank();
  const std::int64_t g = std::int64_t{block_idx().x} * Threads + t;
  switch (op) {
    case dialect_op::block_sum: {
      using reducer = block_reduce<std::int64_t, Threads>;
      PK_SHARED(typename reducer::temp_storage, tmp);
      out[g] = reducer(tmp).all_reduce(in[g], plus{});
      break;
    }
    case dialect_op::barrier: {
      PK_SHARED(std::int64_t[Threads], smem);
      smem[t] = in[g];
      block::sync();
      out[g] = smem[(t + arg) % Threads];
      break;
    }
    case dialect_op::shared_isolation: {
      PK_SHARED(std::int64_t[Threads], ids);
      ids[t] = block_idx().x;
      block::sync();
      std::int64_t bad = 0;
      for (int i = 0; i < Threads; ++i) bad += ids[i] != block_idx().x;
      out[g] = bad;
      break;
    }
    case dialect_op::shared_poison: {
      PK_SHARED(std::uint32_t[Threads], fresh);
      out[g] = fresh[t];
      break;
    }
    case dialect_op::divergent_shfl: {
      std::int64_t v = in[g];
      if (lane_id() < 16)
        v = warp<>::shfl(v, 0);
      else
        v = warp<>::shfl(v, 1);
      out[g] = v;
      break;
    }
    case dialect_op::divergent_barrier: {
      if (t >= Threads / 2) return;
      block::sync();
      out[g] = 1;
      break;
    }
    case dialect_op::split_barrier: {
      if (warp_id() == 0)
        block::sync();
      else
        block::sync();
      out[g] = 1;
      break;
    }
    case dialect_op::warp_size: out[g] = warp_size; break;
    case dialect_op::exp2_poly: {
      const float x = ::pk::detail::bit_cast<float>(static_cast<std::uint32_t>(in[g]));
      out[g] = ::pk::detail::bit_cast<std::uint32_t>(exp2_poly(x));
      break;
    }
    default: out[g] = -1;
  }
}

template <int W>
status launch_warp(const stream& s, const dialect_call& c) {
  if constexpr (W > warp_size) {
    return unsupported("logical width " + std::to_string(W) + " exceeds this arch's warp size");
  } else {
    launch_shape sh;
    sh.grid_x = c.blocks;
    sh.block_x = c.threads;
    sh.name = "dialect_warp_kernel";
    return launch(s, &warp_kernel<W>, sh, c.op, c.arg, c.in, c.out);
  }
}

status run(const stream& s, const dialect_call& c) {
  switch (c.op) {
    case dialect_op::shfl_idx:
    case dialect_op::shfl_up:
    case dialect_op::shfl_down:
    case dialect_op::shfl_xor:
    case dialect_op::ballot:
    case dialect_op::any:
    case dialect_op::all:
    case dialect_op::reduce:
    case dialect_op::reduce_order:
      switch (c.width) {
        case 1: return launch_warp<1>(s, c);
        case 2: return launch_warp<2>(s, c);
        case 4: return launch_warp<4>(s, c);
        case 7: return launch_warp<7>(s, c);
        case 8: return launch_warp<8>(s, c);
        case 9: return launch_warp<9>(s, c);
        case 16: return launch_warp<16>(s, c);
        case 32: return launch_warp<32>(s, c);
        case 64: return launch_warp<64>(s, c);
        default: return invalid_argument("width " + std::to_string(c.width) + " is not compiled in the test");
      }
    default: {
      launch_shape sh;
      sh.grid_x = c.blocks;
      sh.name = "dialect_block_kernel";
      switch (c.threads) {
        case 64: sh.block_x = 64; return launch(s, &block_kernel<64>, sh, c.op, c.arg, c.in, c.out);
        case 128: sh.block_x = 128; return launch(s, &block_kernel<128>, sh, c.op, c.arg, c.in, c.out);
        case 256: sh.block_x = 256; return launch(s, &block_kernel<256>, sh, c.op, c.arg, c.in, c.out);
        case 1024: sh.block_x = 1024; return launch(s, &block_kernel<1024>, sh, c.op, c.arg, c.in, c.out);
        default: return invalid_argument("block size " + std::to_string(c.threads) + " is not compiled in the test");
      }
    }
  }
}

}  // namespace test_impl
PK_DETAIL_TARGET_END
