// pk::attention_forward on every backend against a double-precision CPU reference, with FlashAttention's
// two-reference rule (attention_case.hpp states it). Shapes: small on the emulator (it runs every lane as
// a fiber), the large ones only on GPUs.
#include "attention_case.hpp"

#include <pk/attention/attention_policy.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace pk::test {

// The names of the candidates the stream's code has (attention::ws_compiled) that fit its device for `pr`.
inline std::vector<std::string> fitting_candidates(const stream& s, attention::attention_problem pr) {
  pr.ws_compiled = attention::ws_compiled(s.code_target());
  std::vector<std::string> names;
  for (const auto& cand : attention::plan(s.device(), pr).choice.all)
    if (cand.fits) names.push_back(cand.name);
  return names;
}
// The same for the problem a case describes: its head_dim, longest query and key sequences, and mask.
inline std::vector<std::string> fitting_candidates(const stream& s, const attn_case& c) {
  attention::attention_problem pr;
  pr.head_dim = c.d;
  pr.seqlen_q = *std::max_element(c.sq.begin(), c.sq.end());
  pr.seqlen_k = *std::max_element(c.sk.begin(), c.sk.end());
  pr.causal = c.causal;
  return fitting_candidates(s, pr);
}
namespace {

class AttentionForward : public ::testing::TestWithParam<backend_param> {
 protected:
  bool on_gpu() const { return GetParam().gpu; }
};

// Bigger shapes only where the hardware runs them (the emulator runs each lane as a fiber).
std::vector<int> seqlens(bool gpu) {
  std::vector<int> v{1, 17, 113, 239};
  if (gpu) v.insert(v.end(), {799, 1025});
  return v;
}

TEST_P(AttentionForward, SeqlensCausalAndNot) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int n : seqlens(on_gpu()))
    for (bool causal : {false, true}) {
      attn_case c;
      c.batch = 2;
      c.heads_q = c.heads_kv = 2;
      c.d = 64;
      c.sq = c.sk = {n, n};
      c.causal = causal;
      run_case(s, c, sd + n);
    }
}

TEST_P(AttentionForward, EveryHeadDimBothDtypes) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const int n = on_gpu() ? 257 : 71;
  for (int d : {32, 64, 96, 128, 192, 256})
    for (dtype t : {dtype::bf16, dtype::f16}) {
      attn_case c;
      c.type = t;
      c.d = d;
      c.sq = {n};
      c.sk = {n + 9};
      c.causal = d % 64 == 0;
      run_case(s, c, sd + d);
    }
}

TEST_P(AttentionForward, CausalUnequalLengthsAndFullyMaskedRows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  // seqlen_q > seqlen_k under causal: the first seqlen_q - seqlen_k rows see no key (0, -inf).
  const std::vector<std::pair<int, int>> shapes = on_gpu() ? std::vector<std::pair<int, int>>{{113, 203}, {203, 113}, {1, 239}, {239, 1}, {799, 3}, {1023, 1024}}
                                                           : std::vector<std::pair<int, int>>{{113, 203}, {203, 113}, {1, 239}, {239, 1}, {67, 3}};
  for (auto [q, k] : shapes) {
    attn_case c;
    c.heads_q = 2;
    c.heads_kv = 1;
    c.d = 128;
    c.sq = {q};
    c.sk = {k};
    c.causal = true;
    run_case(s, c, sd + q * 7 + k);
  }
}

TEST_P(AttentionForward, GroupedQueryHeads) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int ratio : {1, 4, 8}) {
    attn_case c;
    c.heads_q = 8;
    c.heads_kv = 8 / ratio;
    c.d = 64;
    c.sq = {on_gpu() ? 300 : 45};
    c.sk = {on_gpu() ? 333 : 77};
    c.causal = ratio == 4;
    run_case(s, c, sd + ratio);
  }
}

TEST_P(AttentionForward, VariableLengthWithEmptyAndSingleTokenSequences) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (bool causal : {false, true}) {
    attn_case c;
    c.varlen = true;
    c.batch = 6;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.d = 64;
    c.sq = {0, 1, 37, 130, 5, 9};
    c.sk = {3, 1, 37, 150, 0, 1};
    if (on_gpu()) c.sq[3] = 700, c.sk[3] = 900;
    c.causal = causal;
    run_case(s, c, sd + causal);
  }
  // Packed K/V tokens after the last sequence hold NaN (a buffer larger than cu_seqlens_k[batch]): the last
  // sequence's boundary key tile reads them, and P = 0 there must not turn into 0 * NaN. Every candidate of
  // both strategies (the warp-specialized one zeroes those V rows in shared memory).
  for (int d : {64, 128}) {
    attention::attention_problem pr;
    pr.batch = 2;
    pr.heads_q = 2;
    pr.head_dim = d;
    pr.seqlen_q = 70;
    pr.seqlen_k = 77;
    for (const std::string& name : fitting_candidates(s, pr)) {
      attn_case c;
      c.varlen = true;
      c.batch = 2;
      c.heads_q = 2;
      c.heads_kv = 1;
      c.d = d;
      c.sq = {33, 70};
      c.sk = {41, 77};
      c.kv_tail = 40;
      c.policy = name;
      run_case(s, c, sd + 7 + d);
    }
  }
}

TEST_P(AttentionForward, SlidingWindows) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const std::vector<std::pair<int, int>> windows{{16, 0}, {8, 24}, {-1, 5}, {0, 0}, {40, -1}};
  for (auto [l, r] : windows)
    for (auto [q, k] : std::vector<std::pair<int, int>>{{129, 129}, {70, 150}}) {
      attn_case c;
      c.d = 96;
      c.sq = {q};
      c.sk = {k};
      c.window_left = l;
      c.window_right = r;
      run_case(s, c, sd + l * 31 + r + q);
    }
}

TEST_P(AttentionForward, NonContiguousStridesAndCustomScale) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  attn_case c;
  c.type = dtype::f16;
  c.batch = 2;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.d = 128;
  c.sq = {80, 80};
  c.sk = {97, 97};
  c.head_pad = 8;
  c.row_pad = 24;
  c.kv_interleaved = true;
  c.scale = 0.2f;
  c.causal = true;
  run_case(s, c, sd);
}

// Every compiled candidate that fits the device (not only the planner's pick) on ragged causal shapes.
// A persistent grid (the warp-specialized strategy's "_wsp_" candidates: one block per SM) gives a block
// several work items, so the Q tile's barriers and the K/V ring carry their phases from one item to the
// next, and items of empty sequences are skipped by every role alike. More items than twice the SMs of the
// device the stream impersonates, ragged varlen sequences (empty, single-token, one and two key tiles),
// GQA, causal for every other candidate. Targets without a persistent candidate skip with the reason.
TEST_P(AttentionForward, PersistentBlocksWalkSeveralItems) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  const int sms = s.device().sm_count;
  int ran = 0;
  for (int d : {64, 128}) {
    attention::attention_problem pr;
    pr.head_dim = d;
    pr.seqlen_q = 150;
    pr.seqlen_k = 201;
    for (const std::string& name : fitting_candidates(s, pr)) {
      if (name.find("_wsp_") == std::string::npos) continue;
      const bool causal = ran % 2 == 1;  // the candidates alternate: causal and not both run
      attn_case c;
      c.varlen = true;
      c.d = d;
      c.heads_q = 12;
      c.heads_kv = 4;
      // batch x heads_q items per query block: past 2 x sms blocks with one query block per sequence.
      c.batch = (2 * sms) / c.heads_q + 3;
      for (int b = 0; b < c.batch; ++b) {
        const int pattern[] = {0, 1, 37, 150, 5, 129};
        c.sq.push_back(pattern[b % 6]);
        c.sk.push_back(pattern[(b + 2) % 6] + (b % 2));  // b = 4, 10, ...: 5 queries, no key (zero key tiles)
      }
      c.causal = causal;
      c.policy = name;
      run_case(s, c, sd + static_cast<std::uint64_t>(d) + causal);
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << s.device().name << ": no persistent candidate fits or is compiled for this target";
}

// Scores whose row maxima rise from key tile to key tile (keys scaled up along the sequence): by less than
// the online softmax's slack at the default scale (the running maximum stays behind and P exceeds 1), and by
// far more at scale 1 (O rescaled at every tile), on every fitting candidate.
TEST_P(AttentionForward, RowMaximaRisingAcrossKeyTiles) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int d : {64, 128, 256})
    for (const float scale : {0.0f, 1.0f}) {
      attn_case c;
      c.d = d;
      c.heads_q = 2;
      c.heads_kv = 1;
      c.sq = {70};
      c.sk = {601};
      c.causal = scale > 0;  // bottom-right aligned: every row sees at least 532 keys, 5 tiles of 128
      c.scale = scale;
      c.key_ramp = 3.0f;
      for (const std::string& name : fitting_candidates(s, c)) {
        c.policy = name;
        run_case(s, c, sd + static_cast<std::uint64_t>(d));
        if (HasFatalFailure()) return;
      }
    }
}

TEST_P(AttentionForward, EveryCandidatePolicy) {
  PK_TEST_STREAM(GetParam(), s);
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  for (int d : {64, 128, 256}) {
    attn_case c;
    c.d = d;
    c.heads_q = 2;
    c.heads_kv = 1;
    c.sq = {150};
    c.sk = {201};
    c.causal = true;
    int ran = 0;
    for (const std::string& name : fitting_candidates(s, c)) {
      c.policy = name;
      run_case(s, c, sd + d);
      ++ran;
    }
    EXPECT_GT(ran, 0) << "no candidate fits " << s.device().name;
  }
  attn_case c;
  c.policy = "attn_fwd_bf16_d64_b1x1_t1_s1";
  c.sq = c.sk = {8};
  attention_args a;
  device_buffer<std::uint16_t> buf;
  ASSERT_TRUE(buf.allocate(s, 2 * 8 * 64));
  a.q.data = a.k.data = a.v.data = a.out.data = buf.data();
  for (tensor_view* t : {&a.q, &a.k, &a.v, &a.out}) {
    t->type = dtype::bf16;
    t->rank = 4;
    t->shape[0] = 1, t->shape[1] = 8, t->shape[2] = 1, t->shape[3] = 64;
    t->stride[0] = 8 * 64, t->stride[1] = 64, t->stride[2] = 64, t->stride[3] = 1;
  }
  a.out.data = buf.data() + 8 * 64;
  a.policy = c.policy.c_str();
  // The one forced-policy rule: an unknown name is invalid_argument and lists the candidates.
  const status st = attention_forward(s, a);
  EXPECT_EQ(st.code(), errc::invalid_argument) << st.to_string();
  EXPECT_NE(st.message().find("policy attn_fwd_bf16_d64_b1x1_t1_s1 is not a compiled candidate"), std::string::npos)
      << st.to_string();
  EXPECT_NE(st.message().find("candidates: attn_fwd_bf16_d64_"), std::string::npos) << st.to_string();
}

// Bad input: a clear status naming the argument, and nothing launched.
TEST_P(AttentionForward, BadInputNamesTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  device_buffer<std::uint16_t> buf;
  ASSERT_TRUE(buf.allocate(s, 2 * (4 * 64 * 64 + 64)));
  auto view = [&](std::int64_t heads, std::int64_t d, std::size_t at = 0) {
    tensor_view t;
    t.data = buf.data() + at;
    t.type = dtype::bf16;
    t.rank = 4;
    t.stride[3] = 1;
    t.shape[0] = 1;
    t.shape[1] = 16;
    t.shape[2] = heads;
    t.shape[3] = d;
    t.stride[2] = d;
    t.stride[1] = heads * d;
    t.stride[0] = 16 * heads * d;
    return t;
  };
  auto good = [&] {
    attention_args a;
    a.q = view(4, 64);
    a.out = view(4, 64, 4 * 64 * 64 + 64);
    a.k = a.v = view(2, 64);
    return a;
  };
  auto expect = [&](const attention_args& a, errc code, const char* word) {
    const status st = attention_forward(s, a);
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(word), std::string::npos) << st.to_string();
  };
  ASSERT_TRUE(attention_forward(s, good())) << "the baseline arguments must be valid";
  {
    auto a = good();
    a.k = a.v = view(3, 64);
    expect(a, errc::invalid_argument, "heads_kv");
  }
  {
    auto a = good();
    a.v = view(1, 64);
    expect(a, errc::invalid_argument, "v: heads");
  }
  {
    auto a = good();
    a.q = a.out = view(4, 80);
    a.k = a.v = view(2, 80);
    expect(a, errc::unsupported, "head_dim 80");
  }
  {
    auto a = good();
    a.v.rank = 2;
    expect(a, errc::invalid_argument, "v: rank 2 must be 4");
  }
  {
    auto a = good();
    a.q.type = dtype::f32;
    expect(a, errc::unsupported, "q: dtype f32");
  }
  {
    auto a = good();
    a.k.type = dtype::f16;
    expect(a, errc::invalid_argument, "k: dtype f16");
  }
  {
    auto a = good();
    a.k.data = buf.data() + 1;
    expect(a, errc::invalid_argument, "k: data must be 16-byte aligned");
  }
  {
    auto a = good();
    a.v.data = nullptr;
    expect(a, errc::invalid_argument, "v: data must not be null");
  }
  {
    auto a = good();
    a.q.stride[1] = 4 * 64 + 4;
    expect(a, errc::invalid_argument, "q: stride[1]");
  }
  {
    auto a = good();
    a.out.stride[3] = 2;
    expect(a, errc::invalid_argument, "out: the last dimension");
  }
  {
    auto a = good();
    a.window_left = -2;
    expect(a, errc::invalid_argument, "window_left");
  }
  {
    auto a = good();
    a.softmax_scale = -1.0f;
    expect(a, errc::invalid_argument, "softmax_scale");
  }
  {
    auto a = good();
    a.cu_seqlens_q = reinterpret_cast<const std::int32_t*>(buf.data());
    expect(a, errc::invalid_argument, "cu_seqlens");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AttentionForward, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
