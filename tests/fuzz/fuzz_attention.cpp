// libFuzzer target: the attention family's C API (pk_attention_forward, pk_attention_decode,
// pk_kv_cache_append) with fuzzed shapes, strides, dtypes, head dims, GQA ratios, windows, cu_seqlens,
// caches (paged and contiguous, 16-bit and FP8), block tables with out-of-range entries, sequence lengths,
// scales, split counts and pointers. Sizes stay small so that each run is fast on the emulator. Memory is
// the target's own (fuzz_common.hpp); an accepted problem is checked against a CPU reference, and a
// rejected call must leave every output (and the cache) untouched.
#include "fuzz_common.hpp"

#include <random>

using namespace pk_fuzz;

namespace {

// Attention problems are larger than reductions: the cap for backed tensors.
constexpr std::int64_t max_attention_bytes = std::int64_t{1} << 20;
// Batches larger than this have no backed block table or lengths (null: pk must reject them).
constexpr std::int64_t max_batch = 64;
// Inputs are multiples of 1/8 in [-1, 1]: exact in every dtype (FP8 included), exact products in fp32.
constexpr int value_steps = 8;

constexpr int forward_head_dims[] = {32, 64, 96, 128, 192, 256};
constexpr int decode_head_dims[] = {64, 128, 256};

double unit(std::int32_t d) { return d == PK_DTYPE_F16 ? 0x1p-11 : 0x1p-8; }

// FP8 e4m3: fn (bias 7, NaN 0x7F/0xFF) and fnuz (bias 8, NaN 0x80, no negative zero).
double fp8_decode(std::uint8_t c, bool fnuz) {
  const int bias = fnuz ? 8 : 7;
  if (fnuz && c == 0x80) return NAN;
  if (!fnuz && (c & 0x7F) == 0x7F) return NAN;
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  const double v = e == 0 ? std::ldexp(m, 1 - bias - 3) : std::ldexp(8 + m, e - bias - 3);
  return s ? -v : v;
}
std::uint8_t fp8_encode(double v, bool fnuz) {  // exact for the values written (multiples of 1/8, |v| <= 2)
  for (int c = 0; c < 256; ++c)
    if (fp8_decode(static_cast<std::uint8_t>(c), fnuz) == v && !(fnuz && c == 0x80)) return static_cast<std::uint8_t>(c);
  std::abort();
}

bool is_fp8(std::int32_t d) { return d == PK_DTYPE_F8E4M3FN || d == PK_DTYPE_F8E4M3FNUZ; }

double get(const pk_tensor& t, std::int64_t off) {
  if (is_fp8(t.dtype)) return fp8_decode(static_cast<const std::uint8_t*>(t.data)[off], t.dtype == PK_DTYPE_F8E4M3FNUZ);
  return load(t.data, t.dtype, off);
}
void put(const pk_tensor& t, std::int64_t off, double v) {
  if (is_fp8(t.dtype)) static_cast<std::uint8_t*>(t.data)[off] = fp8_encode(v, t.dtype == PK_DTYPE_F8E4M3FNUZ);
  else store(t.data, t.dtype, off, v);
}

std::int64_t off4(const pk_tensor& t, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3];
}

// Every element of a backed 4-D tensor (rank 3: [tokens, heads, dim]) gets a value in [-1, 1].
void fill4(const pk_tensor& t, const backing& b, std::minstd_rand& g) {
  if (!b.buf || b.elems == 0) return;
  const int r = t.rank;
  const std::int64_t n0 = r == 4 ? t.shape[0] : 1;
  for (std::int64_t a = 0; a < n0; ++a)
    for (std::int64_t i = 0; i < t.shape[r - 3]; ++i)
      for (std::int64_t h = 0; h < t.shape[r - 2]; ++h)
        for (std::int64_t d = 0; d < t.shape[r - 1]; ++d) {
          const std::int64_t off = (r == 4 ? a * t.strides[0] : 0) + i * t.strides[r - 3] + h * t.strides[r - 2] + d * t.strides[r - 1];
          put(t, off, static_cast<double>(static_cast<int>(g() % (2 * value_steps + 1)) - value_steps) / value_steps);
        }
}

// A 4-D (or 3-D) [.., seq, heads, dim] tensor's strides: contiguous, padded by multiples of 8 elements, or
// (rarely) anything.
void layout(FuzzedDataProvider& f, pk_tensor& t) {
  row_major(t, 0);
  switch (f.ConsumeIntegralInRange<int>(0, 11)) {
    case 0:  // padded heads and sequence strides (multiples of 8: allowed)
      if (t.rank >= 3) {
        t.strides[t.rank - 2] = t.shape[t.rank - 1] + 8 * f.ConsumeIntegralInRange<int>(0, 2);
        t.strides[t.rank - 3] = wrap_mul(t.strides[t.rank - 2], std::max<std::int64_t>(t.shape[t.rank - 2], 1)) + 8 * f.ConsumeIntegralInRange<int>(0, 2);
        if (t.rank == 4) t.strides[0] = wrap_mul(t.strides[1], std::max<std::int64_t>(t.shape[1], 1));
      }
      break;
    case 1:  // one stride anything
      if (t.rank > 0) t.strides[f.ConsumeIntegralInRange<std::int32_t>(0, t.rank - 1)] = f.ConsumeIntegralInRange<std::int64_t>(-16, 4096);
      break;
    case 3:  // one stride just below 2^62 (a multiple of 8), whose offsets overflow int64 from index 2 on:
             // valid only on an extent of 1 or in an empty view, neither of which may form them
      if (t.rank > 0)
        t.strides[f.ConsumeIntegralInRange<std::int32_t>(0, t.rank - 1)] =
            (std::int64_t{1} << 62) - 8 * f.ConsumeIntegralInRange<std::int64_t>(0, 1 << 20);
      break;
    case 2:  // [b, h, s, d] memory order (heads outer), as a permuted view
      if (t.rank == 4) {
        t.strides[3] = 1;
        t.strides[1] = t.shape[3];
        t.strides[2] = wrap_mul(t.shape[3], std::max<std::int64_t>(t.shape[1], 1));
        t.strides[0] = wrap_mul(t.strides[2], std::max<std::int64_t>(t.shape[2], 1));
      }
      break;
    default: break;
  }
}

int pick(FuzzedDataProvider& f, const int* values, std::size_t n, int lo, int hi) {
  if (f.ConsumeIntegralInRange<int>(0, 15) == 0) return f.ConsumeIntegralInRange<int>(lo, hi);
  return values[f.ConsumeIntegralInRange<std::size_t>(0, n - 1)];
}

std::int32_t window(FuzzedDataProvider& f) {
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return f.ConsumeIntegralInRange<std::int32_t>(0, 40);
    case 1: return f.ConsumeIntegral<std::int32_t>();
    case 2: return INT32_MAX;
    case 3: return f.ConsumeIntegralInRange<std::int32_t>(-3, 3);
    default: return -1;
  }
}

std::int32_t attention_dtype(FuzzedDataProvider& f) {
  if (f.ConsumeIntegralInRange<int>(0, 31) == 0) return f.ConsumeIntegralInRange<std::int32_t>(-1, 10);
  return f.ConsumeBool() ? PK_DTYPE_BF16 : PK_DTYPE_F16;
}

// out[i, :] for one query row: softmax(scale * q k^T) v over the keys `visible`; LSE (natural log).
struct row_result {
  std::vector<double> o;
  double lse = -INFINITY;
};
template <class Q, class K, class V>
row_result attend(int dim, double scale, const std::vector<std::int64_t>& visible, Q q, K k, V v) {
  row_result r;
  r.o.assign(static_cast<std::size_t>(dim), 0.0);
  if (visible.empty()) return r;
  std::vector<double> s(visible.size());
  double mx = -INFINITY;
  for (std::size_t j = 0; j < visible.size(); ++j) {
    double dot = 0;
    for (int d = 0; d < dim; ++d) dot += q(d) * k(visible[j], d);
    s[j] = dot * scale;
    mx = std::max(mx, s[j]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  for (std::size_t j = 0; j < visible.size(); ++j)
    for (int d = 0; d < dim; ++d) r.o[static_cast<std::size_t>(d)] += s[j] / sum * v(visible[j], d);
  r.lse = mx + std::log(sum);
  return r;
}

void check_row(const char* api, const std::string& where, const row_result& want, const pk_tensor& out, std::int64_t base,
               std::int64_t dim_stride, double tol) {
  for (std::size_t d = 0; d < want.o.size(); ++d) {
    const double got = load(out.data, out.dtype, base + static_cast<std::int64_t>(d) * dim_stride);
    if (!(std::fabs(got - want.o[d]) <= tol))
      fail(api, where + " dim " + std::to_string(d) + ": got " + std::to_string(got) + ", want " + std::to_string(want.o[d]));
  }
}

// Keys visible to query i of a sequence with sq queries and sk keys (bottom-right aligned).
std::vector<std::int64_t> visible_keys(std::int64_t i, std::int64_t sq, std::int64_t sk, std::int64_t wl, std::int64_t wr) {
  const std::int64_t diag = sk - sq;
  std::vector<std::int64_t> keys;
  for (std::int64_t j = 0; j < sk; ++j) {
    if (wl >= 0 && j < i + diag - wl) continue;
    if (wr >= 0 && j > i + diag + wr) continue;
    keys.push_back(j);
  }
  return keys;
}

void forward(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_attention_forward";
  pk_attention_args a = pk_attention_args_default();
  const std::int32_t dt = attention_dtype(f);
  const int dim = pick(f, forward_head_dims, std::size(forward_head_dims), 0, 300);
  const int hkv = f.ConsumeIntegralInRange<int>(1, 3);
  const int hq = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<int>(0, 7) : hkv * f.ConsumeIntegralInRange<int>(1, 3);
  const bool varlen = f.ConsumeIntegralInRange<int>(0, 3) == 0;
  const std::int64_t batch = varlen ? 1 : f.ConsumeIntegralInRange<int>(0, 15) == 0 ? extent(f, 3) : f.ConsumeIntegralInRange<int>(1, 2);
  std::int64_t sq = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 4) : f.ConsumeIntegralInRange<int>(1, 24);
  std::int64_t sk = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 4) : f.ConsumeIntegralInRange<int>(1, 40);
  const bool rank3 = varlen ? f.ConsumeIntegralInRange<int>(0, 3) != 0 : f.ConsumeIntegralInRange<int>(0, 7) == 0;
  auto shape = [&](pk_tensor& t, std::int64_t seq, int heads) {
    t.dtype = dt;
    t.rank = rank3 ? 3 : 4;
    const std::int64_t dims[4] = {batch, seq, heads, dim};
    for (int k = 0; k < t.rank; ++k) t.shape[k] = dims[k + (rank3 ? 1 : 0)];
    layout(f, t);
  };
  shape(a.q, sq, hq);
  shape(a.k, sk, hkv);
  shape(a.v, sk, hkv);
  shape(a.out, sq, hq);
  if (f.ConsumeIntegralInRange<int>(0, 15) == 0) a.out.dtype = attention_dtype(f);
  if (f.ConsumeIntegralInRange<int>(0, 15) == 0) a.v.shape[a.v.rank - 1] = pick(f, forward_head_dims, std::size(forward_head_dims), 0, 300);
  std::minstd_rand g(f.ConsumeIntegral<std::uint32_t>() | 1);
  backing bq = back(a.q, pick_placement(f), 0xA5, max_attention_bytes);
  backing bk = back(a.k, pick_placement(f), 0xA5, max_attention_bytes);
  backing bv = back(a.v, pick_placement(f), 0xA5, max_attention_bytes);
  // out = q (the same view): out must share no byte with q, k or v, and a non-empty one is refused.
  const bool out_aliases_q = f.ConsumeIntegralInRange<int>(0, 31) == 0;
  backing bo = back(a.out, pick_placement(f), 0xA5, max_attention_bytes);
  if (out_aliases_q) a.out = a.q;
  fill4(a.q, bq, g);
  fill4(a.k, bk, g);
  fill4(a.v, bv, g);
  if (bo.buf) bo.buf->snapshot();

  a.causal = f.ConsumeIntegralInRange<int>(0, 3) == 0;
  a.window_left = window(f);
  a.window_right = window(f);
  a.softmax_scale = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? f.ConsumeFloatingPoint<float>() : f.ConsumeBool() ? 0.0f : 0.125f;

  std::vector<std::int32_t> cu_q, cu_k;
  std::unique_ptr<buffer> cuq_buf, cuk_buf;
  if (varlen) {
    a.varlen_batch = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 5) : f.ConsumeIntegralInRange<std::int32_t>(1, 4);
    const int nb = std::max(a.varlen_batch, 0) + 1;
    auto cuts = [&](std::vector<std::int32_t>& cu, std::int64_t total) {
      cu.resize(static_cast<std::size_t>(nb));
      for (auto& c : cu) c = static_cast<std::int32_t>(f.ConsumeIntegralInRange<std::int64_t>(0, std::max<std::int64_t>(std::min<std::int64_t>(total, 4096), 0)));
      std::sort(cu.begin(), cu.end());
      cu.front() = 0;
      if (f.ConsumeIntegralInRange<int>(0, 15) == 0) std::swap(cu.front(), cu.back());  // decreasing
    };
    cuts(cu_q, sq);
    cuts(cu_k, sk);
    cuq_buf = std::make_unique<buffer>(cu_q.size() * 4);
    cuk_buf = std::make_unique<buffer>(cu_k.size() * 4);
    std::memcpy(cuq_buf->p, cu_q.data(), cu_q.size() * 4);
    std::memcpy(cuk_buf->p, cu_k.data(), cu_k.size() * 4);
    a.cu_seqlens_q = reinterpret_cast<const std::int32_t*>(cuq_buf->p);
    a.cu_seqlens_k = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? nullptr : reinterpret_cast<const std::int32_t*>(cuk_buf->p);
    std::int32_t mq = 0, mk = 0;
    for (int b = 0; b + 1 < nb; ++b) {
      mq = std::max(mq, cu_q[b + 1] - cu_q[b]);
      mk = std::max(mk, cu_k[b + 1] - cu_k[b]);
    }
    a.max_seqlen_q = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 40) : mq;
    a.max_seqlen_k = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 40) : mk;
  }
  const std::int64_t rows_b = rank3 ? 1 : batch;
  std::unique_ptr<buffer> lse;
  std::int64_t lse_heads = 0, lse_rows = 0;  // both products checked: rows_b * hq alone can overflow
  if (f.ConsumeBool() && hq >= 0 && sq >= 0 && rows_b >= 0 && !__builtin_mul_overflow(rows_b, hq, &lse_heads) &&
      !__builtin_mul_overflow(lse_heads, sq, &lse_rows) && rows_b <= max_batch && lse_rows <= 65536) {
    lse = std::make_unique<buffer>(static_cast<std::size_t>(lse_rows) * sizeof(float));
    lse->snapshot();
    a.lse = reinterpret_cast<float*>(lse->p);
  }

  if (std::getenv("PK_FUZZ_TRACE")) {
    std::fprintf(stderr, "%s varlen %d batch %d causal %d windows %d %d max_seqlen %d %d\n", api, varlen, a.varlen_batch,
                 a.causal, a.window_left, a.window_right, a.max_seqlen_q, a.max_seqlen_k);
    for (std::size_t i = 0; i < cu_q.size(); ++i) std::fprintf(stderr, "  cu_q[%zu] = %d cu_k = %d\n", i, cu_q[i], cu_k[i]);
    trace("q", a.q);
    trace("k", a.k);
    trace("v", a.v);
    trace("out", a.out);
  }
  const pk_status st = pk_attention_forward(s, &a);
  check_status(api, st);
  if (st != PK_SUCCESS) {
    if (bo.buf && !out_aliases_q && !bo.buf->unchanged()) fail(api, "rejected, yet out changed");
    if (lse && !lse->unchanged()) fail(api, "rejected, yet lse changed");
    return;
  }
  // An aliased out is q's view: its backing is q's (the one built for out described a view no longer passed).
  const backing& bout = out_aliases_q ? bq : bo;
  const backing* const views[] = {&bq, &bk, &bv, &bout};
  for (const backing* b : views)
    if (b->what == backing::impossible) fail(api, "accepted extents that cannot exist");
  if (out_aliases_q && bq.elems > 0) fail(api, "accepted out overlapping q");
  if (bout.elems == 0) return;
  for (const backing* b : views) {
    if (b->null_data && b->elems > 0) fail(api, "accepted null data");
    if (b->misaligned) fail(api, "accepted data not aligned to its element size");
  }
  if (hkv == 0 || hq % hkv != 0) fail(api, "accepted heads_q not a multiple of heads_kv");
  if (a.v.shape[a.v.rank - 1] != dim || a.out.dtype != dt) fail(api, "accepted v's head_dim or out's dtype unlike q's");
  if (a.window_left < -1 || a.window_right < -1) fail(api, "accepted a window below -1");
  if (reinterpret_cast<std::uintptr_t>(a.q.data) % 16 || reinterpret_cast<std::uintptr_t>(a.k.data) % 16 ||
      reinterpret_cast<std::uintptr_t>(a.v.data) % 16 || reinterpret_cast<std::uintptr_t>(a.out.data) % 16)
    fail(api, "accepted data that is not 16-byte aligned");
  // Reference, per sequence (varlen: the cu_seqlens ranges of the packed tokens), head and query row.
  const double scale = a.softmax_scale == 0 ? 1 / std::sqrt(double(dim)) : double(a.softmax_scale);
  if (!std::isfinite(scale) || std::fabs(scale) > 16) return;  // extreme scales: only the absence of errors
  const std::int64_t wl = a.window_left, wr = a.causal ? 0 : a.window_right;
  const int r = a.q.rank;
  // Rank 3 has no batch dimension: one sequence per head, whatever batch the input drew (it may be 2^62).
  const std::int64_t nseq = varlen ? a.varlen_batch : rank3 ? 1 : batch;
  const double tol = 8 * unit(dt);
  for (std::int64_t b = 0; b < nseq; ++b) {
    const std::int64_t q0 = varlen ? cu_q[b] : 0, k0 = varlen && a.cu_seqlens_k ? cu_k[b] : 0;
    const std::int64_t lq = varlen ? cu_q[b + 1] - cu_q[b] : sq, lk = varlen ? cu_k[b + 1] - cu_k[b] : sk;
    if (lq < 0 || lk < 0) fail(api, "accepted decreasing cu_seqlens");
    // Varlen tensors are packed with batch 1: every sequence is in batch entry 0.
    const std::int64_t bb = r == 4 && !varlen ? b : 0;
    auto at = [&](const pk_tensor& t, std::int64_t tok, std::int64_t h, std::int64_t d) {
      return (r == 4 ? bb * t.strides[0] : 0) + tok * t.strides[r - 3] + h * t.strides[r - 2] + d * t.strides[r - 1];
    };
    for (std::int64_t h = 0; h < hq; ++h) {
      const std::int64_t hk = h / (hq / hkv);
      for (std::int64_t i = 0; i < lq; ++i) {
        // Windows past the sequence (>= seqlen_k - 1 left, >= seqlen_q - 1 right) act as -1.
        const row_result want = attend(
            dim, scale, visible_keys(i, lq, lk, wl, wr), [&](int d) { return get(a.q, at(a.q, q0 + i, h, d)); },
            [&](std::int64_t j, int d) { return get(a.k, at(a.k, k0 + j, hk, d)); },
            [&](std::int64_t j, int d) { return get(a.v, at(a.v, k0 + j, hk, d)); });
        const std::string where = "seq " + std::to_string(b) + " head " + std::to_string(h) + " row " + std::to_string(i);
        check_row(api, where, want, a.out, at(a.out, q0 + i, h, 0), a.out.strides[r - 1], tol);
        if (a.lse) {
          const std::int64_t li = varlen ? h * sq + q0 + i : (bb * hq + h) * sq + i;
          const double got = a.lse[li];
          if (std::isinf(want.lse) ? got != want.lse : !(std::fabs(got - want.lse) <= 1e-3 * (std::fabs(want.lse) + 1)))
            fail(api, where + " lse: got " + std::to_string(got) + ", want " + std::to_string(want.lse));
        }
      }
    }
  }
}

// The cache of decode and append: paged or contiguous, 16-bit or FP8, with its block table and lengths.
struct cache_case {
  pk_kv_cache c{};
  backing bk, bv, btable;
  std::unique_ptr<buffer> seqlens_buf, kscale_buf, vscale_buf;
  std::vector<std::int32_t> seqlens, table;
  std::int64_t batch = 0, heads_kv = 0, dim = 0, page = 0, pages = 0, per_seq = 0, capacity = 0;
  bool paged = false, lengths_ok = true, scales_ok = true;
  std::vector<double> kscale, vscale;

  // Cache position t of sequence b: the element offset of (t, head h, dim d) in k (or v), or -1 when the
  // slot is out of range.
  std::int64_t slot(const pk_tensor& t, std::int64_t b, std::int64_t pos, std::int64_t h, std::int64_t d) const {
    if (pos < 0 || pos >= capacity) return -1;
    if (!paged) return off4(t, b, pos, h, d);
    const std::int64_t p = table[static_cast<std::size_t>(b * per_seq + pos / page)];
    if (p < 0 || p >= pages) return -1;
    return off4(t, p, pos % page, h, d);
  }
};

void make_cache(FuzzedDataProvider& f, cache_case& cc, std::int32_t qdt, std::int64_t batch, int dim, int hkv,
                std::minstd_rand& g, bool lengths_for_decode, std::int64_t new_tokens) {
  cc.batch = batch;
  cc.heads_kv = hkv;
  cc.dim = dim;
  cc.paged = f.ConsumeBool();
  std::int32_t dt = qdt;
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: dt = PK_DTYPE_F8E4M3FN; break;
    case 1: dt = PK_DTYPE_F8E4M3FNUZ; break;
    case 2: if (f.ConsumeIntegralInRange<int>(0, 7) == 0) dt = attention_dtype(f); break;
    default: break;
  }
  for (pk_tensor* t : {&cc.c.k, &cc.c.v}) {
    t->dtype = dt;
    t->rank = 4;
  }
  if (cc.paged) {
    static constexpr int page_sizes[] = {1, 2, 4, 8, 16};
    cc.page = pick(f, page_sizes, std::size(page_sizes), -1, 300);
    cc.pages = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 3) : f.ConsumeIntegralInRange<int>(1, 8);
    cc.per_seq = f.ConsumeIntegralInRange<int>(1, 6);
    cc.capacity = cc.page > 0 ? cc.per_seq * cc.page : 0;
    for (pk_tensor* t : {&cc.c.k, &cc.c.v}) {
      const std::int64_t dims[4] = {cc.pages, cc.page, hkv, dim};
      std::copy(dims, dims + 4, t->shape);
      layout(f, *t);
    }
    // The block table: pages in range, sometimes one out of range (negative, num_pages, huge).
    cc.table.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(batch, 0, max_batch) * cc.per_seq));
    for (auto& e : cc.table) e = cc.pages > 0 ? static_cast<std::int32_t>(g() % static_cast<std::uint64_t>(std::min<std::int64_t>(cc.pages, 1 << 20))) : 0;
    if (!cc.table.empty() && f.ConsumeIntegralInRange<int>(0, 3) == 0) {
      static constexpr std::int64_t bad[] = {-1, INT32_MIN, INT32_MAX};
      const int which = f.ConsumeIntegralInRange<int>(0, 3);
      cc.table[f.ConsumeIntegralInRange<std::size_t>(0, cc.table.size() - 1)] =
          static_cast<std::int32_t>(which == 3 ? std::min<std::int64_t>(cc.pages, INT32_MAX) : bad[which]);
    }
    cc.c.block_table.dtype = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? attention_dtype(f) : PK_DTYPE_I32;
    cc.c.block_table.rank = 2;
    cc.c.block_table.shape[0] = batch;
    cc.c.block_table.shape[1] = cc.per_seq;
    row_major(cc.c.block_table, f.ConsumeIntegralInRange<int>(0, 3) == 0 ? 5 : 0);
    cc.btable = back(cc.c.block_table, placement::aligned, 0xA5, max_attention_bytes);
    if (cc.btable.buf && cc.c.block_table.dtype == PK_DTYPE_I32)
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t p = 0; p < cc.per_seq; ++p)
          static_cast<std::int32_t*>(cc.c.block_table.data)[b * cc.c.block_table.strides[0] + p] = cc.table[static_cast<std::size_t>(b * cc.per_seq + p)];
    if (batch > max_batch) cc.c.block_table.data = nullptr;  // not backed
    // pk.h: a block table with null data means a contiguous cache, whatever the rest of its descriptor says
    // (here: a dtype with no element size, or a table too large to back). k [pages, page, ...] is then read as
    // [batch, capacity, ...]: valid exactly when pages == batch.
    if (cc.c.block_table.data == nullptr) {
      cc.paged = false;
      cc.capacity = cc.page;
    }
  } else {
    cc.capacity = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 4) : f.ConsumeIntegralInRange<int>(1, 48);
    for (pk_tensor* t : {&cc.c.k, &cc.c.v}) {
      const std::int64_t dims[4] = {batch, cc.capacity, hkv, dim};
      std::copy(dims, dims + 4, t->shape);
      layout(f, *t);
    }
  }
  cc.bk = back(cc.c.k, pick_placement(f), 0xA5, max_attention_bytes);
  cc.bv = back(cc.c.v, pick_placement(f), 0xA5, max_attention_bytes);
  fill4(cc.c.k, cc.bk, g);
  fill4(cc.c.v, cc.bv, g);
  // Lengths: decode counts the new tokens (>= 1 is usual), append the tokens already there.
  cc.seqlens.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(batch, 0, max_batch)));
  for (auto& l : cc.seqlens) {
    std::int64_t room = cc.capacity;  // extents may be drawn at the int64 edges: no overflow here
    if (!lengths_for_decode && __builtin_sub_overflow(cc.capacity, new_tokens, &room)) room = 0;
    l = static_cast<std::int32_t>(room > 0 ? f.ConsumeIntegralInRange<std::int64_t>(0, std::min<std::int64_t>(room, 1 << 20)) : 0);
    if (f.ConsumeIntegralInRange<int>(0, 31) == 0) l = f.ConsumeIntegralInRange<std::int32_t>(-2, 80);
  }
  if (!cc.seqlens.empty() && batch <= max_batch) {
    cc.seqlens_buf = std::make_unique<buffer>(cc.seqlens.size() * 4);
    std::memcpy(cc.seqlens_buf->p, cc.seqlens.data(), cc.seqlens.size() * 4);
    cc.c.seqlens = reinterpret_cast<const std::int32_t*>(cc.seqlens_buf->p);
  }
  if (f.ConsumeIntegralInRange<int>(0, 31) == 0) cc.c.seqlens = nullptr;
  // FP8 scales: powers of two (exact), sometimes 0, negative, inf or NaN.
  if (is_fp8(dt) && hkv > 0) {
    for (auto* sc : {&cc.kscale, &cc.vscale}) {
      if (f.ConsumeBool()) continue;
      sc->resize(static_cast<std::size_t>(hkv));
      for (double& x : *sc) {
        static constexpr double values[] = {0.5, 1, 2, 0.25};
        static constexpr double bad[] = {0, -1, INFINITY, NAN};
        x = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? bad[f.ConsumeIntegralInRange<int>(0, 3)] : values[f.ConsumeIntegralInRange<int>(0, 3)];
        cc.scales_ok &= std::isfinite(x) && x > 0;
      }
    }
    auto put_scales = [&](const std::vector<double>& sc, std::unique_ptr<buffer>& buf, const float*& p) {
      if (sc.empty()) return;
      buf = std::make_unique<buffer>(sc.size() * 4);
      for (std::size_t i = 0; i < sc.size(); ++i) reinterpret_cast<float*>(buf->p)[i] = static_cast<float>(sc[i]);
      p = reinterpret_cast<const float*>(buf->p);
    };
    put_scales(cc.kscale, cc.kscale_buf, cc.c.k_scale);
    put_scales(cc.vscale, cc.vscale_buf, cc.c.v_scale);
  }
}

double scale_of(const std::vector<double>& sc, std::int64_t h) { return sc.empty() ? 1.0 : sc[static_cast<std::size_t>(h)]; }

void decode(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_attention_decode";
  pk_decode_args a = pk_decode_args_default();
  const std::int32_t dt = attention_dtype(f);
  const int dim = pick(f, decode_head_dims, std::size(decode_head_dims), 0, 300);
  const int hkv = f.ConsumeIntegralInRange<int>(1, 2);
  const int hq = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<int>(0, 5) : hkv * f.ConsumeIntegralInRange<int>(1, 4);
  const std::int64_t batch = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 3) : f.ConsumeIntegralInRange<int>(1, 3);
  const std::int64_t sq = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<int>(-1, 20) : f.ConsumeIntegralInRange<int>(1, 4);
  std::minstd_rand g(f.ConsumeIntegral<std::uint32_t>() | 1);
  for (pk_tensor* t : {&a.q, &a.out}) {
    t->dtype = dt;
    t->rank = 4;
    const std::int64_t dims[4] = {batch, sq, hq, dim};
    std::copy(dims, dims + 4, t->shape);
    layout(f, *t);
  }
  backing bq = back(a.q, pick_placement(f), 0xA5, max_attention_bytes);
  backing bo = back(a.out, pick_placement(f), 0xA5, max_attention_bytes);
  fill4(a.q, bq, g);
  if (bo.buf) bo.buf->snapshot();
  cache_case cc;
  make_cache(f, cc, dt, batch, dim, hkv, g, true, 0);
  a.cache = cc.c;
  a.causal = f.ConsumeIntegralInRange<int>(0, 3) == 0;
  a.window_left = window(f);
  a.window_right = window(f);
  a.softmax_scale = f.ConsumeBool() ? 0.0f : 0.125f;
  a.num_splits = f.ConsumeIntegralInRange<int>(0, 3) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 130) : 0;
  a.max_seqlen_k = f.ConsumeIntegralInRange<int>(0, 7) == 0 ? f.ConsumeIntegralInRange<std::int32_t>(-1, 64) : 0;
  std::unique_ptr<buffer> lse, err;
  if (f.ConsumeBool() && batch > 0 && batch <= 64 && hq > 0 && sq > 0) {
    lse = std::make_unique<buffer>(static_cast<std::size_t>(batch * hq * sq) * sizeof(float));
    lse->snapshot();
    a.lse = reinterpret_cast<float*>(lse->p);
  }
  if (f.ConsumeBool()) {
    err = std::make_unique<buffer>(sizeof(std::int32_t), 0);
    a.error = reinterpret_cast<std::int32_t*>(err->p);
  }

  const pk_status st = pk_attention_decode(s, &a);
  check_status(api, st);
  if (st != PK_SUCCESS) {
    if (bo.buf && !bo.buf->unchanged()) fail(api, "rejected, yet out changed");
    if (lse && !lse->unchanged()) fail(api, "rejected, yet lse changed");
    return;
  }
  if (err && *reinterpret_cast<std::int32_t*>(err->p) != 0) fail(api, "success, yet *error was set");
  for (const backing* b : {&bq, &bo, &cc.bk, &cc.bv})
    if (b->what == backing::impossible) fail(api, "accepted extents that cannot exist");
  if (bo.elems == 0) return;
  for (const backing* b : {&bq, &bo, &cc.bk, &cc.bv}) {
    if (b->null_data && b->elems > 0) fail(api, "accepted null data");
    if (b->misaligned) fail(api, "accepted data not aligned to its element size");
  }
  if (!cc.scales_ok) fail(api, "accepted a scale that is not finite and positive");
  if (cc.c.seqlens == nullptr) fail(api, "accepted null seqlens");
  if (hkv == 0 || hq % hkv != 0) fail(api, "accepted heads_q not a multiple of heads_kv");
  if (a.window_left < -1 || a.window_right < -1) fail(api, "accepted a window below -1");
  if (cc.c.k.dtype != dt && !is_fp8(cc.c.k.dtype)) fail(api, "accepted a cache dtype that is neither q's nor FP8");
  if (cc.paged && (cc.page < 1 || cc.page > 256 || (cc.page & (cc.page - 1)))) fail(api, "accepted a page size that is not a power of two in [1, 256]");
  if (cc.paged && cc.c.block_table.dtype != PK_DTYPE_I32) fail(api, "accepted a block table that is not int32");
  if (!cc.paged && cc.c.k.shape[0] != batch) fail(api, "accepted a contiguous cache whose shape[0] differs from the batch");
  const double scale = a.softmax_scale == 0 ? 1 / std::sqrt(double(dim)) : double(a.softmax_scale);
  const std::int64_t wl = a.window_left, wr = a.causal ? 0 : a.window_right;
  const double tol = 8 * unit(dt);
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t len = cc.seqlens[static_cast<std::size_t>(b)];
    if (len < 0 || len > cc.capacity) fail(api, "accepted seqlens[" + std::to_string(b) + "] = " + std::to_string(len) + " outside [0, capacity]");
    for (std::int64_t pos = 0; pos < len; ++pos)
      if (cc.slot(cc.c.k, b, pos, 0, 0) < 0) fail(api, "accepted a block-table entry outside [0, num_pages) for a used page");
    for (std::int64_t h = 0; h < hq; ++h) {
      const std::int64_t hk = h / (hq / hkv);
      for (std::int64_t i = 0; i < sq; ++i) {
        const row_result want = attend(
            dim, scale, visible_keys(i, sq, len, wl, wr), [&](int d) { return get(a.q, off4(a.q, b, i, h, d)); },
            [&](std::int64_t j, int d) { return get(cc.c.k, cc.slot(cc.c.k, b, j, hk, d)) * scale_of(cc.kscale, hk); },
            [&](std::int64_t j, int d) { return get(cc.c.v, cc.slot(cc.c.v, b, j, hk, d)) * scale_of(cc.vscale, hk); });
        const std::string where = "batch " + std::to_string(b) + " head " + std::to_string(h) + " row " + std::to_string(i);
        check_row(api, where, want, a.out, off4(a.out, b, i, h, 0), a.out.strides[3], tol * 2);
        if (a.lse) {
          const double got = a.lse[(b * hq + h) * sq + i];
          if (std::isinf(want.lse) ? got != want.lse : !(std::fabs(got - want.lse) <= 1e-3 * (std::fabs(want.lse) + 1)))
            fail(api, where + " lse: got " + std::to_string(got) + ", want " + std::to_string(want.lse));
        }
      }
    }
  }
}

void append(FuzzedDataProvider& f, pk_stream_t s) {
  const char* api = "pk_kv_cache_append";
  pk_kv_append_args a = pk_kv_append_args_default();
  const std::int32_t dt = attention_dtype(f);
  const int dim = pick(f, decode_head_dims, std::size(decode_head_dims), 0, 300);
  const int hkv = f.ConsumeIntegralInRange<int>(1, 2);
  const std::int64_t batch = f.ConsumeIntegralInRange<int>(0, 31) == 0 ? extent(f, 3) : f.ConsumeIntegralInRange<int>(1, 3);
  const std::int64_t nt = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? extent(f, 3) : f.ConsumeIntegralInRange<int>(1, 6);
  std::minstd_rand g(f.ConsumeIntegral<std::uint32_t>() | 1);
  cache_case cc;
  make_cache(f, cc, dt, batch, dim, hkv, g, false, nt);
  a.cache = cc.c;
  const std::int32_t new_dt = is_fp8(cc.c.k.dtype) && f.ConsumeBool() ? attention_dtype(f) : cc.c.k.dtype;
  for (pk_tensor* t : {&a.k_new, &a.v_new}) {
    t->dtype = new_dt;
    t->rank = 4;
    const std::int64_t dims[4] = {batch, nt, hkv, dim};
    std::copy(dims, dims + 4, t->shape);
    layout(f, *t);
  }
  backing bkn = back(a.k_new, pick_placement(f), 0xA5, max_attention_bytes);
  backing bvn = back(a.v_new, pick_placement(f), 0xA5, max_attention_bytes);
  // New values: in [-1, 1] multiples of 1/8 times the scale, so that quantizing (x / scale) is exact.
  fill4(a.k_new, bkn, g);
  fill4(a.v_new, bvn, g);
  auto scaled = [&](const pk_tensor& t, const backing& b, const std::vector<double>& sc) {
    if (!b.buf || b.elems == 0 || sc.empty() || is_fp8(t.dtype) || !cc.scales_ok) return;
    for (std::int64_t x = 0; x < batch; ++x)
      for (std::int64_t i = 0; i < nt; ++i)
        for (std::int64_t h = 0; h < hkv; ++h)
          for (std::int64_t d = 0; d < dim; ++d) put(t, off4(t, x, i, h, d), get(t, off4(t, x, i, h, d)) * sc[static_cast<std::size_t>(h)]);
  };
  scaled(a.k_new, bkn, cc.kscale);
  scaled(a.v_new, bvn, cc.vscale);
  const bool v_is_k = f.ConsumeIntegralInRange<int>(0, 31) == 0;  // the same source for both is fine
  if (v_is_k) a.v_new = a.k_new;
  std::unique_ptr<buffer> err;
  if (f.ConsumeBool()) {
    err = std::make_unique<buffer>(sizeof(std::int32_t), 0);
    a.error = reinterpret_cast<std::int32_t*>(err->p);
  }
  if (cc.bk.buf) cc.bk.buf->snapshot();
  if (cc.bv.buf) cc.bv.buf->snapshot();

  if (std::getenv("PK_FUZZ_TRACE")) {
    std::fprintf(stderr, "%s paged %d page %lld pages %lld per_seq %lld capacity %lld\n", api, cc.paged, (long long)cc.page,
                 (long long)cc.pages, (long long)cc.per_seq, (long long)cc.capacity);
    for (std::size_t b = 0; b < cc.seqlens.size(); ++b) std::fprintf(stderr, "  seqlens[%zu] = %d\n", b, cc.seqlens[b]);
    for (std::size_t i = 0; i < cc.table.size(); ++i) std::fprintf(stderr, "  table[%zu] = %d\n", i, cc.table[i]);
    for (double x : cc.kscale) std::fprintf(stderr, "  kscale %g\n", x);
    trace("k", cc.c.k);
    trace("k_new", a.k_new);
    trace("block_table", cc.c.block_table);
  }
  const pk_status st = pk_kv_cache_append(s, &a);
  check_status(api, st);
  if (st != PK_SUCCESS) {
    if ((cc.bk.buf && !cc.bk.buf->unchanged()) || (cc.bv.buf && !cc.bv.buf->unchanged()))
      fail(api, "rejected, yet the cache changed");
    return;
  }
  if (err && *reinterpret_cast<std::int32_t*>(err->p) != 0) fail(api, "success, yet *error was set");
  const backing* bv_used = v_is_k ? &bkn : &bvn;
  for (const backing* b : {static_cast<const backing*>(&bkn), bv_used, static_cast<const backing*>(&cc.bk), static_cast<const backing*>(&cc.bv)})
    if (b->what == backing::impossible) fail(api, "accepted extents that cannot exist");
  if (bkn.elems == 0) return;
  for (const backing* b : {static_cast<const backing*>(&bkn), bv_used, static_cast<const backing*>(&cc.bk), static_cast<const backing*>(&cc.bv)}) {
    if (b->null_data && b->elems > 0) fail(api, "accepted null data");
    if (b->misaligned) fail(api, "accepted data not aligned to its element size");
  }
  if (!cc.scales_ok) fail(api, "accepted a scale that is not finite and positive");
  if (cc.c.seqlens == nullptr) fail(api, "accepted null seqlens");
  if (cc.paged && cc.c.block_table.dtype != PK_DTYPE_I32) fail(api, "accepted a block table that is not int32");
  if (!cc.paged && cc.c.k.shape[0] != batch) fail(api, "accepted a contiguous cache whose shape[0] differs from the batch");
  if (is_fp8(cc.c.k.dtype) ? is_fp8(new_dt) && new_dt != cc.c.k.dtype : new_dt != cc.c.k.dtype)
    fail(api, "accepted new tokens of a dtype the cache does not take");
  // Every new token is at its slot; no other byte of the cache changed. A block table may map two new
  // tokens to one slot, and a contiguous cache's strides may overlap its sequences or heads (a caller's
  // aliasing, of K and V each on its own): where two new elements share one, either may win, and only the
  // other bytes are checked.
  for (int which = 0; which < 2; ++which) {
    const pk_tensor& cache = which ? cc.c.v : cc.c.k;
    std::vector<std::int64_t> slots;
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = 0; i < nt; ++i)
        for (std::int64_t h = 0; h < hkv; ++h)
          for (std::int64_t d = 0; d < dim; ++d) slots.push_back(cc.slot(cache, b, cc.seqlens[static_cast<std::size_t>(b)] + i, h, d));
    std::sort(slots.begin(), slots.end());
    const bool aliased = std::adjacent_find(slots.begin(), slots.end()) != slots.end();
    const pk_tensor& src = which ? a.v_new : a.k_new;
    const backing& bc = which ? cc.bv : cc.bk;
    const std::vector<double>& sc = which ? cc.vscale : cc.kscale;
    const std::size_t eb = dtype_bytes(cache.dtype);
    std::vector<bool> written(bc.buf->bytes, false);
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t i = 0; i < nt; ++i) {
        const std::int64_t pos = cc.seqlens[static_cast<std::size_t>(b)] + i;
        if (cc.slot(cache, b, pos, 0, 0) < 0) fail(api, "accepted a new token whose slot is out of range");
        for (std::int64_t h = 0; h < hkv; ++h)
          for (std::int64_t d = 0; d < dim; ++d) {
            const std::int64_t o = cc.slot(cache, b, pos, h, d);
            const double want = is_fp8(cache.dtype) && !is_fp8(src.dtype) ? get(src, off4(src, b, i, h, d)) / scale_of(sc, h)
                                                                             : get(src, off4(src, b, i, h, d));
            const double got = get(cache, o);
            if (!aliased && !(got == want))
              fail(api, std::string(which ? "v" : "k") + " batch " + std::to_string(b) + " token " + std::to_string(i) +
                            " head " + std::to_string(h) + " dim " + std::to_string(d) + ": got " + std::to_string(got) +
                            ", want " + std::to_string(want));
            const auto byte = static_cast<std::size_t>(static_cast<const unsigned char*>(cache.data) + o * static_cast<std::int64_t>(eb) - bc.buf->p);
            for (std::size_t j = 0; j < eb; ++j) written[byte + j] = true;
          }
      }
    for (std::size_t i = 0; i < bc.buf->bytes; ++i)
      if (!written[i] && bc.buf->p[i] != bc.buf->shadow[i]) fail(api, "changed cache byte " + std::to_string(i) + ", which no new token owns");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider f(data, size);
  pk_stream_t s = stream(f.ConsumeIntegralInRange<int>(0, 1));
  switch (f.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: forward(f, s); break;
    case 1: decode(f, s); break;
    default: append(f, s); break;
  }
  return 0;
}
