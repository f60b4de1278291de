// The C API's attention (pk/pk.h) against the same reference and rule as the C++ API, on every backend:
// both accept the same ranks (4, and 3 as batch 1, for fixed and variable lengths), use one LSE layout
// ([batch, heads_q, seqlen_q] of q's rank-4 view; varlen [heads_q, total_q]) and reject bad arguments with
// the same status and message.
#include "attention_case.hpp"
#include "c_stream.hpp"

#include <pk/pk.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <string>

namespace pk::test {
namespace {

pk_tensor to_c(const tensor_view& t) {
  pk_tensor c{};
  c.data = const_cast<void*>(t.data);
  c.dtype = t.type == dtype::bf16 ? PK_DTYPE_BF16 : t.type == dtype::f16 ? PK_DTYPE_F16 : PK_DTYPE_F32;
  c.rank = t.rank;
  for (int i = 0; i < t.rank; ++i) c.shape[i] = t.shape[i], c.strides[i] = t.stride[i];
  return c;
}

// The C call for the same arguments; its status carries the C code and pk_last_error_message().
status c_forward(const stream& s, const attention_args& a) {
  c_stream cs;
  PK_TRY(make_c_stream(s, cs));
  pk_attention_args c = pk_attention_args_default();
  c.q = to_c(a.q);
  c.k = to_c(a.k);
  c.v = to_c(a.v);
  c.out = to_c(a.out);
  c.lse = a.lse;
  c.softmax_scale = a.softmax_scale;
  c.causal = a.causal ? 1 : 0;
  c.window_left = a.window_left;
  c.window_right = a.window_right;
  c.cu_seqlens_q = a.cu_seqlens_q;
  c.cu_seqlens_k = a.cu_seqlens_k;
  c.varlen_batch = a.varlen_batch;
  c.max_seqlen_q = a.max_seqlen_q;
  c.max_seqlen_k = a.max_seqlen_k;
  c.policy = a.policy;
  const pk_status st = pk_attention_forward(cs.h, &c);
  if (st == PK_SUCCESS) return {};
  const errc code = st == PK_ERROR_INVALID_ARGUMENT ? errc::invalid_argument
                    : st == PK_ERROR_UNSUPPORTED    ? errc::unsupported
                                                    : errc::internal;
  return {code, pk_last_error_message()};
}

class AttentionCApi : public ::testing::TestWithParam<backend_param> {};

TEST(AttentionCApiDefaults, MatchTheCxxDefaults) {
  const pk_attention_args c = pk_attention_args_default();
  const attention_args d;
  EXPECT_EQ(c.window_left, d.window_left);
  EXPECT_EQ(c.window_right, d.window_right);
  EXPECT_EQ(c.softmax_scale, d.softmax_scale);
  EXPECT_EQ(c.causal != 0, d.causal);
  EXPECT_EQ(c.lse, d.lse);
  EXPECT_EQ(c.cu_seqlens_q, nullptr);
  EXPECT_EQ(c.policy, nullptr);
}

// Every layout both APIs accept gives the reference's answer (and LSE) through the C API.
TEST_P(AttentionCApi, SameLayoutsAndLseAsCxx) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  std::vector<attn_case> cases;
  {
    attn_case c;  // fixed length, rank 4, batch 2: LSE [batch, heads_q, seqlen_q]
    c.batch = 2;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.sq = {23, 23};
    c.sk = {41, 41};
    c.causal = true;
    cases.push_back(c);
  }
  {
    attn_case c;  // fixed length, rank 3 [seqlen, heads, head_dim]: batch 1
    c.type = dtype::f16;
    c.d = 128;
    c.heads_q = 2;
    c.sq = {33};
    c.sk = {17};
    c.rank3 = true;
    c.row_pad = 8;
    cases.push_back(c);
  }
  for (bool rank3 : {true, false}) {
    attn_case c;  // varlen, rank 3 packed tokens and rank 4 with batch 1: LSE [heads_q, total_q]
    c.varlen = true;
    c.batch = 3;
    c.heads_q = 3;
    c.heads_kv = 1;
    c.d = 32;
    c.sq = {9, 0, 30};
    c.sk = {12, 5, 30};
    c.rank3 = rank3;
    c.window_left = INT_MAX;
    c.window_right = 4;
    cases.push_back(c);
  }
  for (const attn_case& c : cases) {
    run_case(s, c, sd, c_forward);
    run_case(s, c, sd, [](const stream& st, const attention_args& a) { return attention_forward(st, a); });
    if (HasFatalFailure()) return;
  }
}

// Bad arguments: the same status code and message through both APIs (the C message may add its prefix).
TEST_P(AttentionCApi, SameErrorsAsCxx) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<std::uint16_t> buf;
  ASSERT_TRUE(buf.allocate(s, 2 * 16 * 4 * 64));
  auto view = [&](std::int64_t heads, std::size_t at) {
    tensor_view t;
    t.data = buf.data() + at;
    t.type = dtype::bf16;
    t.rank = 4;
    t.shape[0] = 1, t.shape[1] = 16, t.shape[2] = heads, t.shape[3] = 64;
    t.stride[0] = 16 * heads * 64, t.stride[1] = heads * 64, t.stride[2] = 64, t.stride[3] = 1;
    return t;
  };
  auto good = [&] {
    attention_args a;
    a.q = view(4, 0);
    a.out = view(4, 16 * 4 * 64);
    a.k = a.v = view(2, 0);
    return a;
  };
  auto same = [&](const attention_args& a, errc code, const std::string& words) {
    const status cxx = attention_forward(s, a), c = c_forward(s, a);
    EXPECT_EQ(cxx.code(), code) << cxx.to_string();
    EXPECT_EQ(c.code(), code) << c.to_string();
    EXPECT_NE(cxx.message().find(words), std::string::npos) << cxx.to_string();
    EXPECT_NE(c.message().find(cxx.message()), std::string::npos) << "C: " << c.to_string() << "\nC++: " << cxx.to_string();
  };
  {
    auto a = good();
    a.k.rank = 2;
    const status cxx = attention_forward(s, a), c = c_forward(s, a);
    EXPECT_EQ(cxx.code(), errc::invalid_argument) << cxx.to_string();
    EXPECT_EQ(c.code(), errc::invalid_argument) << c.to_string();
    for (const status* st : {&cxx, &c})
      EXPECT_NE(st->message().find("k: rank 2 must be 4 ([batch, seqlen, heads, head_dim]) or 3 ([tokens, heads, head_dim], batch 1)"),
                std::string::npos)
          << st->to_string();
  }
  {
    auto a = good();  // varlen with a batch of 2
    std::vector<std::int32_t> cu{0, 16};
    device_buffer<std::int32_t> dcu;
    ASSERT_TRUE(dcu.allocate(s, 2) && dcu.upload(cu));
    a.cu_seqlens_q = a.cu_seqlens_k = dcu.data();
    a.varlen_batch = 1;
    a.max_seqlen_q = a.max_seqlen_k = 16;
    a.q.shape[0] = a.out.shape[0] = 2;
    a.q.shape[1] = a.out.shape[1] = 8;
    a.k.shape[0] = a.v.shape[0] = 2;
    a.k.shape[1] = a.v.shape[1] = 8;
    same(a, errc::invalid_argument, "varlen: q: batch 2 must be 1");
  }
  {
    auto a = good();
    a.window_right = -2;
    same(a, errc::invalid_argument, "window_left/window_right");
  }
  {
    auto a = good();
    a.out.stride[1] = 0;
    same(a, errc::invalid_argument, "out: stride[1] = 0 makes elements overlap");
  }
  {
    auto a = good();
    a.q.type = a.k.type = a.v.type = a.out.type = dtype::f32;
    same(a, errc::unsupported, "q: dtype f32");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionCApi, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
