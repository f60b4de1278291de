// Test kernels for the portable dialect, compiled once per target (dialect_kernels.cpp). The test
// bodies (test_dialect.cpp) call them through dialect_call(), which dispatches on the stream's target.
#pragma once
#include <pk/config.hpp>
#include <pk/runtime.hpp>

#include <cstdint>

namespace pk::test {

enum class dialect_op : int {
  shfl_idx,     //!< out = shfl(in, arg * lane + 1 ... see kernel) with logical width
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,       //!< out = ballot(in & 1)
  any,
  all,
  reduce,       //!< out = warp<width>::reduce(in, plus)
  reduce_order, //!< out = warp<width>::reduce(in, non-commutative op) — checks the order
  block_sum,    //!< out = block_reduce all_reduce(in, plus)
  barrier,      //!< smem[t] = in; sync; out = smem[(t + arg) % block]
  shared_isolation,  //!< each block fills smem with its id, syncs, out = sum of mismatches
  shared_poison,     //!< out = first word of fresh shared memory (emulator only)
  divergent_shfl,    //!< planted: lanes < 16 shuffle at one site, the others at another (emulator only)
  divergent_barrier, //!< planted: half of the block exits before a barrier (emulator only)
  split_barrier,     //!< planted: warps wait at two different barriers (emulator only)
  warp_size,         //!< out = the compile-time warp size
  exp2_poly,         //!< out = the bits of exp2_poly(the float whose bits are in's low 32)
};

struct dialect_call {
  dialect_op op;
  int width = 32;   //!< logical warp width (template parameter of the kernel; see the switch)
  int arg = 0;
  unsigned blocks = 1;
  unsigned threads = 64;
  const std::int64_t* in = nullptr;
  std::int64_t* out = nullptr;
};

status run_dialect(const stream& s, const dialect_call& c);

}  // namespace pk::test
