// Device-wide reductions: public API.
//
//   pk::stream s;  pk::default_stream(s);
//   pk::device_buffer<float> x, total;  x.allocate(s, n);  total.allocate(s, 1);  ... upload ...
//   if (auto st = pk::reduce_sum(s, x.data(), n, total.data()); !st) std::cerr << st.to_string();
//
// One launch; scratch memory comes from the stream's workspace (pk::set_workspace_allocator). The
// result is run-to-run deterministic for a given plan. n == 0 writes the identity (0).
#pragma once
#include <pk/archdb/planner.hpp>
#include <pk/runtime.hpp>
#include <pk/status.hpp>

#include <cstdint>

namespace pk {

//! Sum of `n` floats at `in` (device memory of `s`) into `*out` (device memory), accumulated in fp32.
status reduce_sum(const stream& s, const float* in, std::int64_t n, float* out);

namespace reduction {
//! The plan pk::reduce_sum would use for n elements of `elem_bytes` bytes on `device`: the policy
//! chosen among the compiled candidates, with the reasons (`pk plan reduce` prints it).
archdb::plan plan_reduce(const archdb::device_desc& device, std::int64_t n, int elem_bytes);
//! Blocks the single-pass kernel launches for a plan.
unsigned reduce_grid(const archdb::device_desc& device, const archdb::plan& p, std::int64_t n, int elem_bytes);
}  // namespace reduction

}  // namespace pk
