// Argument checks shared by the attention entry points (attention_forward, attention_decode,
// kv_cache_append): rank-4 [batch or pages, tokens, heads, head_dim] views and their offsets. Host only.
#pragma once
#include <pk/status.hpp>
#include <pk/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

namespace pk::attention::views {

inline constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

inline status bad(std::string_view fn, const std::string& m) { return invalid_argument(std::string(fn) + ": " + m); }

//! Whether a view has no element (an extent of 0). Nothing of it is read or written, so its strides are
//! not checked: the calls carry zero strides for it, never offsets formed from them.
inline bool is_empty(const tensor_view& t) {
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] == 0) return true;
  return false;
}

//! a * b + c for non-negative operands, or -1 when an operand is negative (an earlier overflow) or the
//! result leaves int64.
inline std::int64_t mul_add(std::int64_t a, std::int64_t b, std::int64_t c) {
  if (a < 0 || b < 0 || c < 0 || (a != 0 && b > (int64_max - c) / a)) return -1;
  return a * b + c;
}

//! A rank-4 view of `type` whose last extent is head_dim: contiguous last dimension, the other strides
//! non-negative whole 16-byte rows, data 16-byte aligned (null only when empty), extent 1 <= max_tokens,
//! and the byte offset of its last element within int64.
inline status check_view(std::string_view fn, const char* name, const tensor_view& t, dtype type, int head_dim,
                         std::int64_t max_tokens) {
  const int eb = size_of(type);
  if (t.type != type)
    return bad(fn, std::string(name) + ": dtype " + to_string(t.type) + " differs from the expected " + to_string(type));
  if (t.rank != 4) return bad(fn, std::string(name) + ": rank " + std::to_string(t.rank) + " must be 4");
  for (int i = 0; i < 4; ++i)
    if (t.shape[i] < 0) return bad(fn, std::string(name) + ": shape[" + std::to_string(i) + "] is negative");
  if (t.shape[3] != head_dim)
    return bad(fn, std::string(name) + ": head_dim " + std::to_string(t.shape[3]) + " differs from q's " + std::to_string(head_dim));
  if (t.stride[3] != 1) return bad(fn, std::string(name) + ": the last dimension must be contiguous (stride[3] == 1)");
  const bool empty = is_empty(t);
  if (t.data == nullptr && !empty) return bad(fn, std::string(name) + ": data must not be null");
  if (reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0) return bad(fn, std::string(name) + ": data must be 16-byte aligned");
  const int row_elems = 16 / eb;
  for (int i = 0; i < 3; ++i)
    if (t.stride[i] % row_elems != 0 || t.stride[i] < 0)
      return bad(fn, std::string(name) + ": stride[" + std::to_string(i) + "] = " + std::to_string(t.stride[i]) +
                         " must be a non-negative multiple of " + std::to_string(row_elems) + " elements (16-byte rows)");
  if (t.shape[1] > max_tokens)
    return unsupported(std::string(fn) + ": " + name + ": seqlen " + std::to_string(t.shape[1]) + " exceeds " +
                       std::to_string(max_tokens) + " (2^31 - 1 less one tile: 32-bit positions)");
  if (!empty) {
    std::int64_t last = t.shape[3] - 1;
    for (int i = 0; i < 3 && last >= 0; ++i) last = mul_add(t.shape[i] - 1, t.stride[i], last);
    if (last < 0 || last > int64_max / eb - 1)
      return bad(fn, std::string(name) + ": the offset of the last element (sum of (shape[i] - 1) * stride[i]) in bytes "
                         "exceeds 2^63 - 1");
  }
  return {};
}

//! `t` is written by many blocks at once: no two of its elements may share memory. Sufficient rule: taken by
//! increasing stride, each dimension's stride is at least the span of the ones before it.
inline status check_distinct(std::string_view fn, const char* name, const tensor_view& t) {
  int dims[3] = {0, 1, 2};
  std::sort(dims, dims + 3, [&](int x, int y) { return t.stride[x] < t.stride[y]; });
  std::int64_t span = t.shape[3];
  for (const int i : dims) {
    if (t.shape[i] <= 1) continue;
    if (t.stride[i] < span)
      return bad(fn, std::string(name) + ": stride[" + std::to_string(i) + "] = " + std::to_string(t.stride[i]) +
                         " makes elements overlap (each stride must be at least the span of the faster dimensions, " +
                         std::to_string(span) + ")");
    span = mul_add(t.shape[i] - 1, t.stride[i], span);
  }
  return {};
}

//! The bytes [begin, end) from the first to one past the last element of a view that passed check_view
//! (its last offset fits int64), or an empty range for an empty view.
struct byte_range {
  std::uintptr_t begin = 0, end = 0;
};
inline byte_range range_of(const tensor_view& t) {
  if (is_empty(t) || t.data == nullptr) return {};
  std::int64_t last = 0;
  for (int i = 0; i < t.rank; ++i) last += (t.shape[i] - 1) * t.stride[i];
  const auto b = reinterpret_cast<std::uintptr_t>(t.data);
  return {b, b + static_cast<std::uintptr_t>((last + 1) * size_of(t.type))};
}
//! `bytes` bytes from `p` (null or 0 bytes: empty).
inline byte_range range_of(const void* p, std::int64_t bytes) {
  if (p == nullptr || bytes <= 0) return {};
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  return {b, b + static_cast<std::uintptr_t>(bytes)};
}

//! Whether two views of the same dtype, shape and strides, `delta` elements apart, share an element:
//! whether delta = sum_d i_d * stride[d] with |i_d| < shape[d]. Exact when, taken by decreasing stride,
//! each stride exceeds the span of the faster dimensions (then at most two digits fit each dimension);
//! otherwise it answers true (shared, the safe side).
inline bool same_geometry_views_share(const tensor_view& t, std::int64_t delta) {
  int dims[tensor_view::max_rank];
  int n = 0;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] > 1) dims[n++] = i;
  std::sort(dims, dims + n, [&](int x, int y) { return t.stride[x] > t.stride[y]; });
  std::int64_t rest[tensor_view::max_rank + 1] = {};  // rest[k]: span - 1 of dims[k..n)
  for (int k = n - 1; k >= 0; --k) {
    rest[k] = rest[k + 1] + (t.shape[dims[k]] - 1) * t.stride[dims[k]];
    if (t.stride[dims[k]] <= rest[k + 1]) return true;
  }
  auto search = [&](auto&& self, int k, std::int64_t r) -> bool {
    if (k == n) return r == 0;
    const std::int64_t S = t.stride[dims[k]], m = t.shape[dims[k]] - 1;
    const std::int64_t lo = r >= 0 ? r / S : -((-r + S - 1) / S);  // floor(r / S)
    for (std::int64_t i = lo; i <= lo + 1; ++i)
      if (i >= -m && i <= m) {
        const std::int64_t left = r - i * S;
        if (left >= -rest[k + 1] && left <= rest[k + 1] && self(self, k + 1, left)) return true;
      }
    return false;
  };
  return search(search, 0, delta);
}

//! What a call writes must not share memory with what it reads or with another output: the kernels read
//! inputs while other blocks write outputs, so an overlap is a race, not an in-place operation. The rule is
//! on the address ranges (first to last element); where two ranges meet and both are views of one dtype,
//! shape and strides (K and V caches interleaved in one buffer, say), on their elements exactly.
struct named_range {
  const char* name;
  byte_range r;
  const tensor_view* view = nullptr;
};
inline status check_disjoint(std::string_view fn, const named_range& w, const named_range& o) {
  if (w.r.begin == w.r.end || o.r.begin == o.r.end || w.r.end <= o.r.begin || o.r.end <= w.r.begin) return {};
  if (w.view != nullptr && o.view != nullptr && w.view->type == o.view->type && w.view->rank == o.view->rank &&
      std::equal(w.view->shape, w.view->shape + w.view->rank, o.view->shape) &&
      std::equal(w.view->stride, w.view->stride + w.view->rank, o.view->stride)) {
    const std::int64_t eb = size_of(w.view->type);
    const std::int64_t delta = static_cast<std::int64_t>(o.r.begin - w.r.begin);  // |delta| < the ranges' size
    if (delta % eb == 0 && !same_geometry_views_share(*w.view, delta / eb)) return {};
  }
  return bad(fn, std::string(w.name) + ": its memory overlaps " + o.name + "'s (an output must not share any byte "
                 "with an input or another output)");
}

//! Every output against every input and every other output (check_disjoint).
inline status check_disjoint(std::string_view fn, std::initializer_list<named_range> written,
                             std::initializer_list<named_range> read) {
  for (auto w = written.begin(); w != written.end(); ++w) {
    for (auto o = w + 1; o != written.end(); ++o) PK_TRY(check_disjoint(fn, *w, *o));
    for (const named_range& o : read) PK_TRY(check_disjoint(fn, *w, o));
  }
  return {};
}

}  // namespace pk::attention::views
