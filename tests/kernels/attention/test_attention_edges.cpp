// Edges of pk::attention_forward's arguments on every backend: sliding windows up to INT_MAX, at, just
// inside and just past the sequence (the API treats a bound that masks nothing as absent, and must not
// change any row: checked against the double reference, which applies the windows as given), the
// tensor ranks and strides the API accepts, and a clear status for every argument that would otherwise
// give a silent wrong answer.
#include "attention_case.hpp"

#include <climits>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace pk::test {
namespace {

class AttentionEdges : public ::testing::TestWithParam<backend_param> {};

constexpr int imax = INT_MAX;

// Windows around every boundary of a (seqlen_q, seqlen_k) problem, unclamped (>= -1).
std::vector<std::pair<int, int>> edge_windows(int sq, int sk) {
  auto w = [](long long x) { return static_cast<int>(std::max(-1LL, std::min<long long>(x, imax))); };
  return {{imax, -1},         {-1, imax},         {imax, imax},       {imax, 0},         {0, imax},
          {w(sk - 1), w(sq - 1)} /* exactly at: masks nothing */,     {w(sk - 2), w(sq - 2)} /* just inside */,
          {w(sk), w(sq)} /* just past */,                             {imax - 1, 3},     {2, imax - 1},
          {w(sk + 1), 0},     {0, w(sq + 1)}};
}

TEST_P(AttentionEdges, WindowsAtAndPastTheSequence) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  // Equal lengths, seqlen_q > seqlen_k (negative diagonal: huge left windows overflowed int), the reverse,
  // and single tokens.
  for (auto [q, k] : std::vector<std::pair<int, int>>{{33, 33}, {70, 20}, {20, 70}, {1, 17}, {17, 1}})
    for (auto [l, r] : edge_windows(q, k)) {
      attn_case c;
      c.heads_q = 2;
      c.heads_kv = 1;
      c.d = 64;
      c.sq = {q};
      c.sk = {k};
      c.window_left = l;
      c.window_right = r;
      run_case(s, c, sd + static_cast<std::uint64_t>(q * 131 + k));
      if (HasFatalFailure()) return;
    }
}

TEST_P(AttentionEdges, CausalWithLeftWindows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (auto [q, k] : std::vector<std::pair<int, int>>{{33, 33}, {70, 20}, {20, 70}, {1, 9}})
    for (int l : {imax, imax - 1, k, k - 1, k - 2, 5, 0}) {
      attn_case c;
      c.type = dtype::f16;
      c.d = 32;
      c.sq = {q};
      c.sk = {k};
      c.causal = true;
      c.window_left = std::max(-1, l);
      c.window_right = imax;  // causal overrides it
      run_case(s, c, sd + static_cast<std::uint64_t>(q + k));
      if (HasFatalFailure()) return;
    }
}

// Varlen: the API clamps with the packed token counts; windows at the boundaries of single sequences
// and of the totals must keep every sequence's meaning.
TEST_P(AttentionEdges, VarlenWindowsAtSequenceAndTotalBoundaries) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const std::vector<int> sq{5, 40, 1, 0, 19}, sk{40, 3, 1, 7, 19};
  const int tq = 65, tk = 70;
  const std::vector<std::pair<int, int>> windows{{imax, imax}, {39, 4},        {tk - 1, tq - 1}, {tk - 2, tq - 2},
                                                 {tk, tq},     {imax, 0},      {0, imax},        {2, 39}};
  for (bool causal : {false, true})
    for (auto [l, r] : windows) {
      attn_case c;
      c.varlen = true;
      c.batch = 5;
      c.heads_q = 4;
      c.heads_kv = 2;
      c.d = 64;
      c.sq = sq;
      c.sk = sk;
      c.causal = causal;
      c.window_left = l;
      c.window_right = r;
      c.rank3 = l % 2 == 0;
      run_case(s, c, sd + static_cast<std::uint64_t>(l) + r);
      if (HasFatalFailure()) return;
    }
}

// The planner's key-range count is 64-bit: unclamped INT_MAX windows count the same tiles as no window.
// Scaled scores past 2^31 (a softmax scale of 2^40: what queries and keys of magnitude 10^4 give at head_dim 128):
// the online softmax's fused multiply-subtract would hand exp2 the product's rounding error, up to 2^-24 of the
// score, and overflow (NaN rows) or underflow the largest score's probability (LSE -inf, output 0).
TEST_P(AttentionEdges, HugeScoresStayFinite) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (const float scale : {0x1p40f, 0x1p20f})
    for (const bool causal : {false, true}) {
      attn_case c;
      c.heads_q = 2;
      c.heads_kv = 1;
      c.d = 64;
      c.sq = {45};
      c.sk = {77};
      c.causal = causal;
      c.scale = scale;
      run_case(s, c, sd + static_cast<std::uint64_t>(causal));
      if (HasFatalFailure()) return;
    }
}

TEST_P(AttentionEdges, PlannerCountsHugeWindowsAsNone) {
  PK_TEST_STREAM(GetParam(), s);
  for (auto [q, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{{4096, 4096}, {70000, 200}, {200, 70000}}) {
    attention::attention_problem none;
    none.head_dim = 128;
    none.heads_q = 8;
    none.seqlen_q = q;
    none.seqlen_k = k;
    attention::attention_problem huge = none;
    huge.window_left = imax;
    huge.window_right = imax;
    const auto a = attention::plan(s.device(), none), b = attention::plan(s.device(), huge);
    ASSERT_GE(a.choice.index, 0) << a.choice.why;
    EXPECT_EQ(a.choice.index, b.choice.index) << "sq " << q << " sk " << k << ": " << b.choice.why;
    EXPECT_EQ(a.choice.why, b.choice.why) << "sq " << q << " sk " << k;
    none.causal = huge.causal = true;
    huge.window_right = -1;
    const auto c = attention::plan(s.device(), none), d = attention::plan(s.device(), huge);
    EXPECT_EQ(c.choice.index, d.choice.index) << "causal, sq " << q << " sk " << k << ": " << d.choice.why;
    EXPECT_EQ(c.choice.why, d.choice.why) << "causal, sq " << q << " sk " << k;
  }
}

// Rank 3 [tokens, heads, head_dim] is rank 4 with batch 1, with fixed lengths too; dimensions of
// extent 1 accept any stride.
TEST_P(AttentionEdges, RankThreeAndExtentOneStrides) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  attn_case c;
  c.heads_q = 3;
  c.heads_kv = 1;
  c.d = 128;
  c.sq = {45};
  c.sk = {29};
  c.rank3 = true;
  c.causal = true;
  c.row_pad = 8;
  run_case(s, c, sd);
  attn_case one;
  one.sq = one.sk = {37};
  one.d = 64;
  // The batch (extent 1) and the head (extent 1) dimensions get strides no rule would accept elsewhere.
  run_case(s, one, sd + 1, [](const stream& st, const attention_args& a) {
    attention_args b = a;
    for (tensor_view* t : {&b.q, &b.k, &b.v, &b.out}) t->stride[0] = -3, t->stride[2] = 5;
    return attention_forward(st, b);
  });
}

// Arguments that used to give a silent wrong answer (or a crash) now give a status naming the rule.
TEST_P(AttentionEdges, BadArgumentsNameTheRule) {
  PK_TEST_STREAM(GetParam(), s);
  constexpr std::size_t one = 4 * 16 * 64;  // a [1, 16, 4, 64] tensor; out in a second one
  device_buffer<std::uint16_t> buf;
  ASSERT_TRUE(buf.allocate(s, 2 * one));
  ASSERT_TRUE(buf.upload(std::vector<std::uint16_t>(2 * one, to_bits(dtype::bf16, 0.25f))));
  auto view = [&](std::int64_t heads, std::size_t at = 0) {
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
    a.q = view(4);
    a.out = view(4, one);
    a.k = a.v = view(2);
    return a;
  };
  auto expect = [&](const attention_args& a, errc code, const std::string& words, int line) {
    const status st = attention_forward(s, a);
    EXPECT_EQ(st.code(), code) << "line " << line << ": " << st.to_string();
    EXPECT_NE(st.message().find(words), std::string::npos) << "line " << line << ": " << st.to_string();
  };
  ASSERT_TRUE(attention_forward(s, good())) << "the baseline arguments must be valid";
  {
    auto a = good();
    a.q.rank = 5;
    expect(a, errc::invalid_argument, "q: rank 5 must be 4", __LINE__);
  }
  {
    auto a = good();
    a.q.stride[1] = std::int64_t{1} << 60;  // 15 rows of 2^60 elements: the byte offset leaves int64
    expect(a, errc::invalid_argument, "q: the offset of the last element", __LINE__);
  }
  {
    auto a = good();
    a.k.stride[0] = std::int64_t{1} << 61;  // batch extent 1: the stride is not used
    a.v.stride[0] = 8;
    ASSERT_TRUE(attention_forward(s, a)) << "the stride of an extent-1 dimension is not used";
  }
  {
    auto a = good();
    a.out.stride[1] = 0;  // every token written to the same row
    expect(a, errc::invalid_argument, "out: stride[1] = 0 makes elements overlap", __LINE__);
  }
  {
    auto a = good();
    a.out.stride[2] = 32;  // heads overlapping by half a row
    expect(a, errc::invalid_argument, "out: stride[2] = 32 makes elements overlap", __LINE__);
  }
  {
    auto a = good();
    a.out = a.q;  // in place: other blocks still read the rows this one writes
    expect(a, errc::invalid_argument, "out: its memory overlaps q's", __LINE__);
  }
  {
    auto a = good();
    a.k = a.v = view(2, one);  // out and the keys share the second tensor's first half
    expect(a, errc::invalid_argument, "out: its memory overlaps k's", __LINE__);
  }
  {
    auto a = good();
    a.lse = reinterpret_cast<float*>(buf.data() + one + 64);  // inside out
    expect(a, errc::invalid_argument, "out: its memory overlaps lse's", __LINE__);
  }
  {
    auto a = good();
    a.lse = reinterpret_cast<float*>(buf.data() + 64);  // inside q
    expect(a, errc::invalid_argument, "lse: its memory overlaps q's", __LINE__);
  }
  {
    auto a = good();
    a.k = a.v = view(4);  // inputs may share memory: q, k and v as one tensor
    ASSERT_TRUE(attention_forward(s, a)) << "q, k and v may share memory";
  }
  {
    auto a = good();
    a.q.stride[1] = 0;  // inputs may repeat rows (broadcast): only out must be distinct
    ASSERT_TRUE(attention_forward(s, a)) << "q may broadcast";
  }
  {
    auto a = good();
    for (tensor_view* t : {&a.q, &a.k, &a.v, &a.out}) t->shape[3] = (std::int64_t{1} << 32) + 64;
    expect(a, errc::unsupported, "head_dim 4294967360", __LINE__);
  }
  {
    auto a = good();
    a.softmax_scale = 3e38f;  // finite, but not times log2(e)
    expect(a, errc::invalid_argument, "softmax_scale", __LINE__);
  }
  {
    auto a = good();
    a.k.shape[1] = a.v.shape[1] = INT_MAX - 8;  // within the old < 2^31 rule, past the tiles' 32-bit room
    a.k.stride[1] = a.v.stride[1] = 0;
    a.policy = "not-a-policy";  // should the check go, a status still comes back before any launch
    expect(a, errc::unsupported, "k: seqlen 2147483639 exceeds", __LINE__);
  }
  {
    // seqlen_k + window_right past 2^31 (the window is below seqlen_q - 1, so it is kept): valid, the
    // kernel forms window sums in 64 bits. The unknown policy stops the call after validation.
    auto a = good();
    a.q.shape[1] = a.out.shape[1] = std::int64_t{1} << 30;
    a.q.stride[1] = 0;
    a.out.stride[1] = 4 * 64;
    a.out.data = nullptr;  // rejected before any data is needed
    a.k.shape[1] = a.v.shape[1] = (std::int64_t{1} << 30) + (std::int64_t{1} << 29);
    a.k.stride[1] = a.v.stride[1] = 0;
    a.window_right = (1 << 30) - 2;
    a.policy = "not-a-policy";  // should the check go, a status still comes back before any launch
    expect(a, errc::invalid_argument, "out: data must not be null", __LINE__);
    a.out.data = buf.data() + one;
    expect(a, errc::invalid_argument, "policy not-a-policy is not a compiled candidate", __LINE__);
  }
  {
    auto a = good();
    a.cu_seqlens_q = a.cu_seqlens_k = reinterpret_cast<const std::int32_t*>(buf.data());
    a.varlen_batch = 1;
    a.v.shape[0] = 2;
    a.v.stride[0] = 0;
    expect(a, errc::invalid_argument, "varlen: v: batch 2 must be 1", __LINE__);
  }
}

// Keys of length 0 are never read, so the strides of an empty K/V are not checked and may be anything: every
// row's output is 0 and its LSE -inf. Batch strides whose offsets overflow int64 (2 * 2^62) must not reach
// the offsets the kernels form (the sanitized build reports them).
TEST_P(AttentionEdges, EmptyKeysWithStridesWhoseOffsetsOverflow) {
  PK_TEST_STREAM(GetParam(), s);
  constexpr std::int64_t batch = 3, sq = 16, hq = 4, hkv = 2, d = 64;
  constexpr std::size_t q_elems = batch * sq * hq * d;
  device_buffer<std::uint16_t> q, o;
  device_buffer<float> lse;
  ASSERT_TRUE(q.allocate(s, q_elems));
  ASSERT_TRUE(o.allocate(s, q_elems));
  ASSERT_TRUE(lse.allocate(s, batch * hq * sq));
  ASSERT_TRUE(q.upload(std::vector<std::uint16_t>(q_elems, to_bits(dtype::bf16, 0.25f))));
  ASSERT_TRUE(o.upload(std::vector<std::uint16_t>(q_elems, 0x7fc1)));  // a bf16 NaN
  ASSERT_TRUE(lse.upload(std::vector<float>(batch * hq * sq, std::nanf(""))));
  auto view = [&](void* data, std::int64_t seqlen, std::int64_t heads) {
    tensor_view t;
    t.data = data;
    t.type = dtype::bf16;
    t.rank = 4;
    t.shape[0] = batch, t.shape[1] = seqlen, t.shape[2] = heads, t.shape[3] = d;
    t.stride[0] = seqlen * heads * d, t.stride[1] = heads * d, t.stride[2] = d, t.stride[3] = 1;
    return t;
  };
  attention_args a;
  a.q = view(q.data(), sq, hq);
  a.out = view(o.data(), sq, hq);
  a.k = a.v = view(q.data(), 0, hkv);  // non-null data: the keys' memory is there, but none is read
  a.k.stride[0] = a.v.stride[0] = std::int64_t{1} << 62;
  a.lse = lse.data();
  const status st = attention_forward(s, a);
  ASSERT_TRUE(st) << st.to_string();
  ASSERT_TRUE(synchronize(s));
  std::vector<std::uint16_t> got;
  std::vector<float> got_lse;
  ASSERT_TRUE(o.download(got));
  ASSERT_TRUE(lse.download(got_lse));
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(from_bits(dtype::bf16, got[i]), 0.0f) << "out element " << i;
  for (std::size_t i = 0; i < got_lse.size(); ++i) ASSERT_EQ(got_lse[i], -INFINITY) << "lse element " << i;
}

// Variable-length offsets: read on the emulator (device memory is host memory there) and checked; on a
// GPU they are the caller's precondition (a check would need a copy and a synchronization).
TEST_P(AttentionEdges, VarlenOffsetsInconsistentWithTheMaxima) {
  if (GetParam().gpu) GTEST_SKIP() << "cu_seqlens are not read on the host for GPU streams (documented precondition)";
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<std::uint16_t> in, out;
  ASSERT_TRUE(in.allocate(s, 16 * 2 * 64));
  ASSERT_TRUE(in.upload(std::vector<std::uint16_t>(in.size(), to_bits(dtype::f16, 0.5f))));
  ASSERT_TRUE(out.allocate(s, 16 * 2 * 64));
  device_buffer<std::int32_t> cq, ck;
  auto run = [&](std::vector<std::int32_t> q, std::vector<std::int32_t> k, int max_q, int max_k) {
    attention_args a;
    for (tensor_view* t : {&a.q, &a.k, &a.v, &a.out}) {
      t->data = t == &a.out ? out.data() : in.data();
      t->type = dtype::f16;
      t->rank = 3;
      t->shape[0] = 16, t->shape[1] = 2, t->shape[2] = 64;
      t->stride[0] = 2 * 64, t->stride[1] = 64, t->stride[2] = 1;
    }
    EXPECT_TRUE(cq.allocate(s, q.size()) && cq.upload(q) && ck.allocate(s, k.size()) && ck.upload(k));
    a.cu_seqlens_q = cq.data();
    a.cu_seqlens_k = ck.data();
    a.varlen_batch = static_cast<int>(q.size()) - 1;
    a.max_seqlen_q = max_q;
    a.max_seqlen_k = max_k;
    return attention_forward(s, a);
  };
  auto expect = [](const status& st, const std::string& words) {
    EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
    EXPECT_NE(st.message().find(words), std::string::npos) << st.to_string();
  };
  ASSERT_TRUE(run({0, 5, 16}, {0, 10, 10}, 11, 10)) << "consistent offsets";
  ASSERT_TRUE(run({3, 5, 16}, {2, 10, 10}, 11, 8)) << "offsets need not start at 0";
  expect(run({0, 5, 16}, {0, 10, 10}, 8, 10), "cu_seqlens_q: sequence 1 has 11 tokens, more than max_seqlen_q = 8");
  expect(run({0, 5, 16}, {0, 10, 10}, 0, 10), "more than max_seqlen_q = 0");
  expect(run({0, 5, 16}, {0, 12, 12}, 11, 10), "cu_seqlens_k: sequence 0 has 12 tokens, more than max_seqlen_k = 10");
  expect(run({0, 9, 5}, {0, 10, 10}, 11, 10), "cu_seqlens_q: must be non-decreasing (cu_seqlens_q[2] = 5 < cu_seqlens_q[1] = 9)");
  expect(run({0, 5, 17}, {0, 10, 10}, 12, 10), "cu_seqlens_q[2] = 17 exceeds the packed token count 16");
  expect(run({-1, 5, 16}, {0, 10, 10}, 11, 10), "cu_seqlens_q[0] = -1 must be >= 0");
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionEdges, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
