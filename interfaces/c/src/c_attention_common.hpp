// Internal to the C API: what the attention family's wrappers (c_attention.cpp, c_decode.cpp) share,
// the mapping of pk_dtype values to pk::dtype and the copy of a checked descriptor into a
// pk::tensor_view. Each wrapper checks the ranks its entry point takes before converting.
#pragma once
#include "c_api.hpp"

#include <pk/tensor.hpp>

#include <array>
#include <string>

namespace pk::capi {

struct attention_dtype_entry {
  std::int32_t c;
  pk::dtype cpp;
};
//! The attention family's element types (the C++ API decides which of them each entry point and tensor
//! takes: FP8 only for KV caches). Block tables (int32) are converted by c_decode.cpp.
inline constexpr std::array attention_dtype_table{
    attention_dtype_entry{PK_DTYPE_BF16, pk::dtype::bf16},
    attention_dtype_entry{PK_DTYPE_F16, pk::dtype::f16},
    attention_dtype_entry{PK_DTYPE_F32, pk::dtype::f32},
    attention_dtype_entry{PK_DTYPE_F8E4M3FN, pk::dtype::f8e4m3fn},
    attention_dtype_entry{PK_DTYPE_F8E4M3FNUZ, pk::dtype::f8e4m3fnuz},
};

//! `t` (passed check_tensor, rank <= pk::tensor_view::max_rank) as a pk::tensor_view; a dtype outside
//! the table is unsupported, naming `where`.
inline status to_attention_view(const std::string& where, const pk_tensor& t, pk::tensor_view& v) {
  bool known = false;
  for (const attention_dtype_entry& e : attention_dtype_table)
    if (e.c == t.dtype) {
      v.type = e.cpp;
      known = true;
    }
  if (!known) return pk::unsupported(where + ": dtype " + dtype_name(t.dtype) + " is not a dtype of the attention family");
  v.data = t.data;
  v.rank = t.rank;
  for (std::int32_t k = 0; k < t.rank; ++k) {
    v.shape[k] = t.shape[k];
    v.stride[k] = t.strides[k];
  }
  return {};
}

}  // namespace pk::capi
