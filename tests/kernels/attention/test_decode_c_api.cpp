// The C API's attention over a KV cache (pk_attention_decode, pk_kv_cache_append in pk/pk.h), on every
// backend: bad arguments return the documented pk_status with a last-error message naming the argument
// (checks that need no working kernel), FP8 is refused where only KV caches take it, and one paged bf16
// decode with shuffled pages matches a double-precision CPU reference written here, under FlashAttention's
// two-reference rule (attention_case.hpp states it): max|out - ref| <= 2 max|naive - ref| + 2 noise, where
// naive is the same computation at the kernel's precision in another order and noise =
// max|(ref + 0.3 - 0.3) - ref| in bf16.
#include "attention_case.hpp"
#include "c_stream.hpp"

#include <pk/attention/decode.hpp>
#include <pk/pk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace pk::test {
namespace {

// A row-major C descriptor.
pk_tensor c_tensor(void* data, std::int32_t dtype, std::initializer_list<std::int64_t> shape) {
  pk_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<std::int32_t>(shape.size());
  std::int64_t stride = 1;
  for (std::int32_t k = t.rank - 1; k >= 0; --k) {
    t.shape[k] = shape.begin()[k];
    t.strides[k] = stride;
    stride *= t.shape[k];
  }
  return t;
}

// The problem of the valid decode (and the starting point of every bad call): batch 2, one new token per
// sequence, 4 query heads over 2 KV heads (grouped-query), head_dim 64, bf16, a paged cache of 16-token
// pages, 4 pages per sequence (capacity 64) taken from a pool of 10 in shuffled order. The lengths are not
// multiples of the page size; the rest of each sequence's last page, its unused pages and the two spare
// pages hold NaN, so a read past a sequence's length shows in the output.
struct paged_problem {
  static constexpr int batch = 2, seqlen_q = 1, heads_q = 4, heads_kv = 2, d = 64, page = 16;
  static constexpr int pages_per_seq = 4, num_pages = batch * pages_per_seq + 2;
  std::vector<int> lens{37, 50};
  std::vector<float> q;               // [batch, seqlen_q, heads_q, d] (bf16 values)
  std::vector<std::vector<float>> k;  // per sequence [len, heads_kv, d]
  std::vector<std::vector<float>> v;
  std::vector<std::int32_t> table;    // [batch, pages_per_seq]
  device_buffer<std::uint16_t> dq, dout, dk, dv;
  device_buffer<std::int32_t> dtable, dseqlens;
  device_buffer<float> dlse;

  // Fresh data from `seed`, uploaded; out and lse start as NaN.
  status make(const stream& s, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    q = random_seq(rng, dtype::bf16, std::size_t{batch} * seqlen_q * heads_q * d);
    k.resize(batch);
    v.resize(batch);
    for (int b = 0; b < batch; ++b) {
      k[b] = random_seq(rng, dtype::bf16, static_cast<std::size_t>(lens[b]) * heads_kv * d);
      v[b] = random_seq(rng, dtype::bf16, static_cast<std::size_t>(lens[b]) * heads_kv * d);
    }
    std::vector<std::int32_t> pool(num_pages);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    table.assign(pool.begin(), pool.begin() + batch * pages_per_seq);
    const std::size_t page_elems = std::size_t{page} * heads_kv * d;
    std::vector<std::uint16_t> hk(page_elems * num_pages, nan_bits(dtype::bf16)), hv = hk;
    for (int b = 0; b < batch; ++b)
      for (int t = 0; t < lens[b]; ++t) {
        const std::size_t at = static_cast<std::size_t>(table[static_cast<std::size_t>(b * pages_per_seq + t / page)]) * page_elems +
                               static_cast<std::size_t>(t % page) * heads_kv * d;
        for (std::size_t e = 0; e < std::size_t{heads_kv} * d; ++e) {
          hk[at + e] = to_bits(dtype::bf16, k[b][static_cast<std::size_t>(t) * heads_kv * d + e]);
          hv[at + e] = to_bits(dtype::bf16, v[b][static_cast<std::size_t>(t) * heads_kv * d + e]);
        }
      }
    std::vector<std::uint16_t> hq(q.size());
    for (std::size_t i = 0; i < q.size(); ++i) hq[i] = to_bits(dtype::bf16, q[i]);
    PK_TRY(dq.allocate(s, hq.size()));
    PK_TRY(dq.upload(hq));
    PK_TRY(dout.allocate(s, hq.size()));
    PK_TRY(dout.upload(std::vector<std::uint16_t>(hq.size(), nan_bits(dtype::bf16))));
    PK_TRY(dk.allocate(s, hk.size()));
    PK_TRY(dk.upload(hk));
    PK_TRY(dv.allocate(s, hv.size()));
    PK_TRY(dv.upload(hv));
    PK_TRY(dtable.allocate(s, table.size()));
    PK_TRY(dtable.upload(table));
    PK_TRY(dseqlens.allocate(s, lens.size()));
    PK_TRY(dseqlens.upload(std::vector<std::int32_t>(lens.begin(), lens.end())));
    PK_TRY(dlse.allocate(s, std::size_t{batch} * heads_q * seqlen_q));
    return dlse.upload(std::vector<float>(std::size_t{batch} * heads_q * seqlen_q, std::nanf("")));
  }

  pk_kv_cache cache() {
    pk_kv_cache c = pk_decode_args_default().cache;
    c.k = c_tensor(dk.data(), PK_DTYPE_BF16, {num_pages, page, heads_kv, d});
    c.v = c_tensor(dv.data(), PK_DTYPE_BF16, {num_pages, page, heads_kv, d});
    c.block_table = c_tensor(dtable.data(), PK_DTYPE_I32, {batch, pages_per_seq});
    c.seqlens = dseqlens.data();
    return c;
  }

  pk_decode_args args() {
    pk_decode_args a = pk_decode_args_default();
    a.q = c_tensor(dq.data(), PK_DTYPE_BF16, {batch, seqlen_q, heads_q, d});
    a.out = c_tensor(dout.data(), PK_DTYPE_BF16, {batch, seqlen_q, heads_q, d});
    a.cache = cache();
    a.lse = dlse.data();
    return a;
  }
};

// A failed C call: its status, and the message pk_last_error_message() holds right after it.
struct c_result {
  pk_status st;
  std::string message;
};
c_result decode(pk_stream_t s, const pk_decode_args* a) {
  const pk_status st = pk_attention_decode(s, a);
  return {st, pk_last_error_message()};
}
c_result append(pk_stream_t s, const pk_kv_append_args* a) {
  const pk_status st = pk_kv_cache_append(s, a);
  return {st, pk_last_error_message()};
}

// `r` has status `expected` and a message holding every one of `words` (the argument and the rule).
void expect_error(const c_result& r, pk_status expected, std::initializer_list<const char*> words) {
  EXPECT_EQ(r.st, expected) << "got " << pk_status_string(r.st) << ", expected " << pk_status_string(expected)
                            << ": \"" << r.message << "\"";
  for (const char* w : words) EXPECT_NE(r.message.find(w), std::string::npos) << "\"" << r.message << "\" should name \"" << w << "\"";
}

class DecodeCApi : public ::testing::TestWithParam<backend_param> {};

TEST(DecodeCApiDefaults, MatchTheCxxDefaults) {
  const pk_decode_args c = pk_decode_args_default();
  const decode_args d;
  EXPECT_EQ(c.window_left, d.window_left);
  EXPECT_EQ(c.window_right, d.window_right);
  EXPECT_EQ(c.window_left, -1);
  EXPECT_EQ(c.window_right, -1);
  EXPECT_EQ(c.softmax_scale, d.softmax_scale);
  EXPECT_EQ(c.causal != 0, d.causal);
  EXPECT_EQ(c.num_splits, d.num_splits);
  EXPECT_EQ(c.max_seqlen_k, d.max_seqlen_k);
  EXPECT_EQ(c.lse, nullptr);
  EXPECT_EQ(c.error, nullptr);
  EXPECT_EQ(c.policy, nullptr);
  EXPECT_EQ(c.q.data, nullptr);
  EXPECT_EQ(c.cache.block_table.data, nullptr);  // a contiguous cache
  EXPECT_EQ(c.cache.seqlens, nullptr);
  EXPECT_EQ(c.cache.k_scale, nullptr);
  EXPECT_EQ(c.cache.v_scale, nullptr);
  const pk_kv_append_args a = pk_kv_append_args_default();
  EXPECT_EQ(a.cache.block_table.data, nullptr);
  EXPECT_EQ(a.cache.seqlens, nullptr);
  EXPECT_EQ(a.k_new.data, nullptr);
  EXPECT_EQ(a.error, nullptr);
}

// Bad arguments, each a one-field change of a valid call: the documented status and a message naming the
// argument. None needs a working kernel: every one is refused before a launch.
TEST_P(DecodeCApi, BadArgumentsNameTheArgument) {
  PK_TEST_STREAM(GetParam(), s);
  c_stream cs;
  ASSERT_TRUE(make_c_stream(s, cs));
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  paged_problem p;
  ASSERT_TRUE(p.make(s, sd));
  using P = paged_problem;

  expect_error(decode(cs.h, nullptr), PK_ERROR_INVALID_ARGUMENT, {"pk_attention_decode", "args"});
  {
    const pk_decode_args a = p.args();
    expect_error(decode(nullptr, &a), PK_ERROR_INVALID_ARGUMENT, {"pk_attention_decode", "stream"});
  }
  {
    pk_decode_args a = p.args();  // null q
    a.q.data = nullptr;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"q: data must not be null"});
  }
  {
    pk_decode_args a = p.args();  // rank 3 q: decode takes rank 4 only
    a.q = c_tensor(p.dq.data(), PK_DTYPE_BF16, {P::batch * P::seqlen_q, P::heads_q, P::d});
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"pk_attention_decode: q: rank 3 must be 4"});
  }
  {
    pk_decode_args a = p.args();
    a.cache.v.rank = 5;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"cache.v: rank 5 must be 4"});
  }
  {
    pk_decode_args a = p.args();  // 12-token pages: not a power of two
    a.cache.k = c_tensor(p.dk.data(), PK_DTYPE_BF16, {P::num_pages, 12, P::heads_kv, P::d});
    a.cache.v = c_tensor(p.dv.data(), PK_DTYPE_BF16, {P::num_pages, 12, P::heads_kv, P::d});
    expect_error(decode(cs.h, &a), PK_ERROR_UNSUPPORTED, {"cache.k", "page_size 12"});
  }
  {
    pk_decode_args a = p.args();  // 512-token pages: past the largest (256)
    a.cache.k = c_tensor(p.dk.data(), PK_DTYPE_BF16, {1, 512, P::heads_kv, P::d});
    a.cache.v = c_tensor(p.dv.data(), PK_DTYPE_BF16, {1, 512, P::heads_kv, P::d});
    expect_error(decode(cs.h, &a), PK_ERROR_UNSUPPORTED, {"cache.k", "page_size 512"});
  }
  {
    pk_decode_args a = p.args();  // a value that is no pk_dtype
    a.q.dtype = 42;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"q: dtype = 42: not a pk_dtype"});
    a = p.args();
    a.cache.k.dtype = 42;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"cache.k: dtype = 42: not a pk_dtype"});
  }
  for (const std::int32_t fp8 : {PK_DTYPE_F8E4M3FN, PK_DTYPE_F8E4M3FNUZ}) {
    pk_decode_args a = p.args();  // FP8 is a cache format only: never the queries'
    a.q.dtype = a.out.dtype = fp8;
    expect_error(decode(cs.h, &a), PK_ERROR_UNSUPPORTED,
                 {"q: dtype", fp8 == PK_DTYPE_F8E4M3FN ? "f8e4m3fn is not supported" : "f8e4m3fnuz is not supported"});
  }
  for (const std::int32_t splits : {-1, max_decode_splits + 1}) {
    pk_decode_args a = p.args();
    a.num_splits = splits;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"num_splits", std::to_string(splits).c_str()});
  }
  {
    pk_decode_args a = p.args();  // the block table is int32
    a.cache.block_table.dtype = PK_DTYPE_I64;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"cache.block_table", "dtype i64", "i32"});
    a.cache.block_table.dtype = 42;
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"cache.block_table: dtype = 42: not a pk_dtype"});
    a = p.args();
    a.cache.block_table = c_tensor(p.dtable.data(), PK_DTYPE_I32, {P::batch * P::pages_per_seq});
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"cache.block_table: rank 1 must be 2"});
  }
  if (s.backend() == backend_kind::host) {
    // The emulator reads the table: a page index past the pool is refused before anything is written (on a
    // GPU it is the caller's precondition, reported through args.error).
    std::vector<std::int32_t> bad = p.table;
    bad[P::pages_per_seq + 1] = P::num_pages;  // sequence 1, page 1: below its length 50
    device_buffer<std::int32_t> dbad;
    ASSERT_TRUE(dbad.allocate(s, bad.size()) && dbad.upload(bad));
    pk_decode_args a = p.args();
    a.cache.block_table.data = dbad.data();
    expect_error(decode(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"cache.block_table[1][1]"});
    std::vector<std::uint16_t> out;
    ASSERT_TRUE(p.dout.download(out));
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint16_t x) { return x == nan_bits(dtype::bf16); }))
        << "a refused call wrote its output";
  }

  // The append: the same boundary.
  expect_error(append(cs.h, nullptr), PK_ERROR_INVALID_ARGUMENT, {"pk_kv_cache_append", "args"});
  {
    pk_kv_append_args a = pk_kv_append_args_default();
    a.cache = p.cache();
    a.k_new = c_tensor(p.dq.data(), PK_DTYPE_BF16, {P::batch, 1, P::heads_kv * P::d});
    a.v_new = c_tensor(p.dq.data(), PK_DTYPE_BF16, {P::batch, 1, P::heads_kv, P::d});
    expect_error(append(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"pk_kv_cache_append: k_new: rank 3 must be 4"});
    a.k_new = a.v_new;
    a.cache.block_table.dtype = PK_DTYPE_F32;
    expect_error(append(cs.h, &a), PK_ERROR_INVALID_ARGUMENT, {"pk_kv_cache_append: cache.block_table", "dtype f32"});
    a.cache = p.cache();
    a.k_new.dtype = a.v_new.dtype = PK_DTYPE_F8E4M3FN;  // new tokens come as bf16/f16, quantized by pk
    expect_error(append(cs.h, &a), PK_ERROR_UNSUPPORTED, {"k_new: dtype f8e4m3fn"});
  }
}

// FP8 dtypes reach the C API through the descriptor; only the KV cache takes them. The reductions and the
// forward refuse them as unsupported, naming the dtype.
TEST_P(DecodeCApi, Fp8OnlyInKvCaches) {
  PK_TEST_STREAM(GetParam(), s);
  c_stream cs;
  ASSERT_TRUE(make_c_stream(s, cs));
  device_buffer<std::uint8_t> buf;
  ASSERT_TRUE(buf.allocate(s, 4096));
  EXPECT_EQ(pk_dtype_size(PK_DTYPE_F8E4M3FN), 1u);
  EXPECT_EQ(pk_dtype_size(PK_DTYPE_F8E4M3FNUZ), 1u);
  for (const std::int32_t fp8 : {PK_DTYPE_F8E4M3FN, PK_DTYPE_F8E4M3FNUZ}) {
    const char* name = fp8 == PK_DTYPE_F8E4M3FN ? "dtype f8e4m3fn" : "dtype f8e4m3fnuz";
    pk_tensor in = c_tensor(buf.data(), fp8, {64});
    pk_tensor out = c_tensor(buf.data() + 1024, fp8, {});
    c_result r{pk_reduce_sum(cs.h, &in, &out), pk_last_error_message()};
    expect_error(r, PK_ERROR_UNSUPPORTED, {"pk_reduce_sum: in", name, "reduction"});
    out.dtype = PK_DTYPE_F32;  // the input's dtype is named first, not the output's
    r = {pk_reduce_max(cs.h, &in, &out), pk_last_error_message()};
    expect_error(r, PK_ERROR_UNSUPPORTED, {"pk_reduce_max: in", name});
    pk_tensor x = c_tensor(buf.data(), fp8, {4, 16}), y = x;
    r = {pk_softmax(cs.h, &x, &y), pk_last_error_message()};
    expect_error(r, PK_ERROR_UNSUPPORTED, {"pk_softmax: x", name});
    pk_attention_args f = pk_attention_args_default();
    f.q = f.k = f.v = c_tensor(buf.data(), fp8, {1, 4, 1, 64});
    f.out = c_tensor(buf.data() + 2048, fp8, {1, 4, 1, 64});
    r = {pk_attention_forward(cs.h, &f), pk_last_error_message()};
    expect_error(r, PK_ERROR_UNSUPPORTED, {"q: ", name});
  }
}

// Whether query i (of seqlen_q) sees cache position j of a sequence of `len` tokens: bottom-right aligned.
bool sees(int i, int j, int seqlen_q, int len, int window_left, int window_right) {
  const int diag = len - seqlen_q;
  if (window_right >= 0 && j > i + diag + window_right) return false;
  if (window_left >= 0 && j < i + diag - window_left) return false;
  return j <= len - 1;
}

// One (sequence, query head, query row) on the CPU: `naive` false in double, true at the kernel's
// precision in another order (S and the softmax in fp32, P rounded to bf16, P V in fp32, the output
// rounded to bf16). out: d values; returns the natural-log LSE.
double reference_row(const paged_problem& p, int b, int h, int i, bool naive, int window_left, int window_right,
                     std::vector<double>& out) {
  using P = paged_problem;
  const int hk = h / (P::heads_q / P::heads_kv), len = p.lens[static_cast<std::size_t>(b)];
  const float* qi = p.q.data() + ((static_cast<std::size_t>(b) * P::seqlen_q + i) * P::heads_q + h) * P::d;
  const double scale = 1.0 / std::sqrt(double{P::d});
  std::vector<double> sc(static_cast<std::size_t>(len), -std::numeric_limits<double>::infinity());
  std::vector<float> sf(static_cast<std::size_t>(len), -std::numeric_limits<float>::infinity());
  double mx = -std::numeric_limits<double>::infinity();
  float mxf = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < len; ++j) {
    if (!sees(i, j, P::seqlen_q, len, window_left, window_right)) continue;
    const float* kj = p.k[static_cast<std::size_t>(b)].data() + (static_cast<std::size_t>(j) * P::heads_kv + hk) * P::d;
    double acc = 0;
    float accf = 0;
    for (int e = 0; e < P::d; ++e) {
      acc += double{qi[e]} * kj[e];
      accf += qi[e] * kj[e];
    }
    sc[static_cast<std::size_t>(j)] = acc * scale;
    sf[static_cast<std::size_t>(j)] = accf * static_cast<float>(scale);
    mx = std::max(mx, sc[static_cast<std::size_t>(j)]);
    mxf = std::max(mxf, sf[static_cast<std::size_t>(j)]);
  }
  out.assign(P::d, 0.0);
  if (mx == -std::numeric_limits<double>::infinity()) return mx;
  double l = 0;
  float lf = 0;
  for (int j = 0; j < len; ++j) {
    if (!sees(i, j, P::seqlen_q, len, window_left, window_right)) continue;
    l += std::exp(sc[static_cast<std::size_t>(j)] - mx);
    lf += std::exp(sf[static_cast<std::size_t>(j)] - mxf);
  }
  std::vector<float> of(P::d, 0.0f);
  for (int j = 0; j < len; ++j) {
    if (!sees(i, j, P::seqlen_q, len, window_left, window_right)) continue;
    const float* vj = p.v[static_cast<std::size_t>(b)].data() + (static_cast<std::size_t>(j) * P::heads_kv + hk) * P::d;
    if (naive) {
      const float pj = round_to(dtype::bf16, std::exp(sf[static_cast<std::size_t>(j)] - mxf) / lf);
      for (int e = 0; e < P::d; ++e) of[static_cast<std::size_t>(e)] += pj * vj[e];
    } else {
      const double pj = std::exp(sc[static_cast<std::size_t>(j)] - mx) / l;
      for (int e = 0; e < P::d; ++e) out[static_cast<std::size_t>(e)] += pj * vj[e];
    }
  }
  if (naive)
    for (int e = 0; e < P::d; ++e) out[static_cast<std::size_t>(e)] = round_to(dtype::bf16, of[static_cast<std::size_t>(e)]);
  return naive ? std::log(double{lf}) + mxf : std::log(l) + mx;
}

// A paged bf16 decode with shuffled pages through the C API: the planner's split count and forced ones
// (one split, and several merged by the second kernel) all meet the rule, every output and LSE element is
// written, and nothing past a sequence's length (NaN there) is read.
TEST_P(DecodeCApi, PagedBf16MatchesReference) {
  PK_TEST_STREAM(GetParam(), s);
  c_stream cs;
  ASSERT_TRUE(make_c_stream(s, cs));
  const std::uint64_t sd = seed();
  SCOPED_TRACE("seed " + std::to_string(sd));
  using P = paged_problem;
  for (const int splits : {0, 1, 3}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits));
    paged_problem p;
    ASSERT_TRUE(p.make(s, sd));
    pk_decode_args a = p.args();
    a.num_splits = splits;
    const pk_status st = pk_attention_decode(cs.h, &a);
    ASSERT_EQ(st, PK_SUCCESS) << pk_status_string(st) << ": " << pk_last_error_message();
    ASSERT_EQ(pk_stream_synchronize(cs.h), PK_SUCCESS) << pk_last_error_message();
    std::vector<std::uint16_t> out;
    std::vector<float> lse;
    ASSERT_TRUE(p.dout.download(out));
    ASSERT_TRUE(p.dlse.download(lse));

    double err = 0, err_naive = 0, noise = 0, lerr = 0, lerr_naive = 0, lnoise = 0;
    std::vector<double> ref, nv;
    for (int b = 0; b < P::batch; ++b)
      for (int h = 0; h < P::heads_q; ++h)
        for (int i = 0; i < P::seqlen_q; ++i) {
          const double rl = reference_row(p, b, h, i, false, a.window_left, a.window_right, ref);
          const double nl = reference_row(p, b, h, i, true, a.window_left, a.window_right, nv);
          const float got_l = lse[(static_cast<std::size_t>(b) * P::heads_q + h) * P::seqlen_q + i];
          ASSERT_TRUE(std::isfinite(got_l)) << "sequence " << b << " head " << h << " row " << i << ": lse " << got_l;
          lerr = std::max(lerr, std::abs(got_l - rl));
          lerr_naive = std::max(lerr_naive, std::abs(nl - rl));
          // The kernel's LSE passes through base 2 (attention_case.hpp): a few fp32 ulps of max(1, |lse|).
          const float rf = static_cast<float>(rl);
          lnoise = std::max({lnoise, std::abs(static_cast<double>((rf + 0.3f) - 0.3f) - rf),
                             4 * numeric_traits<float>::epsilon() * std::max(1.0, std::abs(rl))});
          for (int e = 0; e < P::d; ++e) {
            const std::size_t at = ((static_cast<std::size_t>(b) * P::seqlen_q + i) * P::heads_q + h) * P::d + e;
            const double got = from_bits(dtype::bf16, out[at]);
            ASSERT_TRUE(std::isfinite(got)) << "sequence " << b << " head " << h << " row " << i << " col " << e << ": " << got;
            err = std::max(err, std::abs(got - ref[static_cast<std::size_t>(e)]));
            err_naive = std::max(err_naive, std::abs(nv[static_cast<std::size_t>(e)] - ref[static_cast<std::size_t>(e)]));
            const float r16 = round_to(dtype::bf16, static_cast<float>(ref[static_cast<std::size_t>(e)]));
            noise = std::max(noise, std::abs(static_cast<double>(round_to(dtype::bf16, round_to(dtype::bf16, r16 + 0.3f) - 0.3f)) - r16));
          }
        }
    EXPECT_LE(err, 2 * err_naive + 2 * noise) << "out: max err " << err << ", naive " << err_naive << ", noise " << noise;
    EXPECT_LE(lerr, 2 * lerr_naive + 2 * lnoise) << "lse: max err " << lerr << ", naive " << lerr_naive << ", noise " << lnoise;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DecodeCApi, ::testing::ValuesIn(all_backends()), param_name);

}  // namespace
}  // namespace pk::test
