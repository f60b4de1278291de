// `pk plan|run|tune|candidates attention`: attention forward (pk::attention_forward) on contiguous
// [batch, seqlen, heads, head_dim] tensors; `tune` runs each candidate by name (attention_args::policy).
// With --context, the problem is decode over a KV cache (pk::attention_decode): `pk plan` shows the policy,
// the split count and the GQA packing; run/tune of decode problems are bench/attention/bench_decode.py's.
#include "family.hpp"

#if __has_include(<pk/attention/attention.hpp>)
#include <pk/attention/attention.hpp>
#include <pk/attention/attention_policy.hpp>
#include <pk/attention/decode.hpp>
#include <pk/attention/decode_policy.hpp>
#include <pk/portable/numeric.hpp>

#include "../../kernels/attention/reference/attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>

namespace pk::tool {
namespace {

struct attn_dtype {
  const char* name;
  dtype type;
  const char* mangled;  //!< Itanium mangling of T inside a pk:: kernel name (pk::bf16 is "NS_4bf16E": S_ = pk)
};
constexpr attn_dtype attn_dtypes[] = {{"bf16", dtype::bf16, "NS_4bf16E"}, {"f16", dtype::f16, "NS_4fp16E"}};
// The head dims with compiled instances (the instance table, kernels/attention/CMakeLists.txt).
constexpr const auto& head_dims = attention::head_dims;

std::uint16_t to_bits(dtype t, float f) {
  return t == dtype::bf16 ? pk::detail::float_to_bf16_bits(f) : pk::detail::float_to_fp16_bits(f);
}
float from_bits(dtype t, std::uint16_t b) {
  return t == dtype::bf16 ? pk::detail::bf16_bits_to_float(b) : pk::detail::fp16_bits_to_float(b);
}
float round_to(dtype t, float f) { return from_bits(t, to_bits(t, f)); }

class attention_family final : public family {
 public:
  [[nodiscard]] std::string name() const override { return "attention"; }
  [[nodiscard]] std::string summary() const override {
    return "attention forward (pk::attention_forward), [batch, seqlen, heads, head_dim] bf16/f16";
  }

  void add_problem_options(CLI::App& cmd) override {
    cmd.add_option("--dtype", dtype_, "bf16 or f16")->capture_default_str();
    cmd.add_option("--batch", pb_.batch, "batch size")->capture_default_str();
    cmd.add_option("--heads", pb_.heads_q, "query heads")->capture_default_str();
    cmd.add_option("--heads-kv", heads_kv_, "key/value heads (default: --heads)");
    cmd.add_option("--head-dim", pb_.head_dim, "head dimension (32, 64, 96, 128, 192, 256)")->capture_default_str();
    cmd.add_option("--seqlen-q", pb_.seqlen_q, "query length")->capture_default_str();
    cmd.add_option("--seqlen-k", seqlen_k_, "key length (default: --seqlen-q)");
    cmd.add_flag("--causal", pb_.causal, "causal mask (bottom-right aligned)");
    cmd.add_option("--window-left", pb_.window_left, "sliding window, keys before the diagonal (-1: none)");
    cmd.add_option("--window-right", pb_.window_right, "sliding window, keys after the diagonal (-1: none)");
    cmd.add_option("--context", context_, "decode over a KV cache of this many tokens per sequence (seqlen_q 1..16)");
    cmd.add_option("--page-size", page_size_, "decode: tokens per page of a paged cache (0: contiguous)")->capture_default_str();
    cmd.add_option("--kv-dtype", kv_dtype_, "decode: cache dtype (the queries', f8e4m3fn, f8e4m3fnuz)");
  }

  status validate() override {
    dt_ = nullptr;
    for (const auto& d : attn_dtypes)
      if (dtype_ == d.name) dt_ = &d;
    if (!dt_) return unsupported("--dtype " + dtype_ + ": attention supports bf16, f16");
    pb_.type = dt_->type;
    pb_.heads_kv = heads_kv_ > 0 ? heads_kv_ : pb_.heads_q;
    pb_.seqlen_k = seqlen_k_ > 0 ? seqlen_k_ : pb_.seqlen_q;
    if (pb_.batch < 1 || pb_.heads_q < 1 || pb_.heads_kv < 1 || pb_.seqlen_q < 1 || pb_.seqlen_k < 1)
      return invalid_argument("--batch, --heads, --heads-kv, --seqlen-q, --seqlen-k: must be >= 1");
    if (pb_.heads_q % pb_.heads_kv != 0)
      return invalid_argument("--heads " + std::to_string(pb_.heads_q) + ": must be a multiple of --heads-kv " +
                              std::to_string(pb_.heads_kv));
    if (context_ > 0) {
      if (pb_.seqlen_q > max_decode_seqlen_q)
        return invalid_argument("--seqlen-q " + std::to_string(pb_.seqlen_q) + ": decode takes 1.." + std::to_string(max_decode_seqlen_q));
      dpb_.type = pb_.type;
      dpb_.kv_type = kv_dtype_.empty() || kv_dtype_ == dtype_ ? pb_.type
                     : kv_dtype_ == "f8e4m3fn"                 ? dtype::f8e4m3fn
                     : kv_dtype_ == "f8e4m3fnuz"               ? dtype::f8e4m3fnuz
                                                               : dtype::i8;
      if (dpb_.kv_type == dtype::i8) return unsupported("--kv-dtype " + kv_dtype_ + ": the queries' dtype, f8e4m3fn or f8e4m3fnuz");
      dpb_.batch = pb_.batch;
      dpb_.heads_q = pb_.heads_q;
      dpb_.heads_kv = pb_.heads_kv;
      dpb_.head_dim = pb_.head_dim;
      dpb_.seqlen_q = static_cast<int>(pb_.seqlen_q);
      dpb_.context = context_;
      dpb_.page_size = page_size_;
      dpb_.causal = pb_.causal;
      dpb_.window_left = pb_.window_left;
      dpb_.window_right = pb_.causal ? 0 : pb_.window_right;
    }
    return {};
  }

  [[nodiscard]] std::string problem_text() const override {
    return "dtype=" + dtype_ + " batch=" + std::to_string(pb_.batch) + " heads=" + std::to_string(pb_.heads_q) + "/" +
           std::to_string(pb_.heads_kv) + " d=" + std::to_string(pb_.head_dim) + " seqlen_q=" + std::to_string(pb_.seqlen_q) +
           (context_ > 0 ? " decode context=" + std::to_string(context_) + " page_size=" + std::to_string(page_size_) +
                               " kv_dtype=" + to_string(dpb_.kv_type)
                         : " seqlen_k=" + std::to_string(pb_.seqlen_k)) +
           (pb_.causal ? " causal" : "");
  }
  [[nodiscard]] nlohmann::json problem_json() const override {
    return {{"dtype", dtype_},           {"batch", pb_.batch},       {"heads_q", pb_.heads_q},
            {"heads_kv", pb_.heads_kv},  {"head_dim", pb_.head_dim}, {"seqlen_q", pb_.seqlen_q},
            {"seqlen_k", pb_.seqlen_k},  {"causal", pb_.causal},     {"window_left", pb_.window_left},
            {"window_right", pb_.window_right}, {"decode_context", context_}, {"page_size", page_size_},
            {"kv_dtype", context_ > 0 ? to_string(dpb_.kv_type) : dtype_}};
  }

  void use_code(pk::target t) override {
    pb_.ws_compiled = attention::ws_compiled(t);
    candidate_names_device_.clear();  // the candidate list depends on the code target
  }
  [[nodiscard]] archdb::plan plan(const archdb::device_desc& d) const override {
    if (context_ == 0) return plan_attention(d, pb_);
    const attention::decode_plan dp = attention::plan_decode(d, dpb_);
    archdb::plan p = dp.choice;
    p.why = "decode over a KV cache: " + std::to_string(dp.splits) + " split" + (dp.splits > 1 ? "s" : "") + " per sequence, " +
            std::to_string(dp.rows) + " packed query rows per KV head in " + std::to_string(dp.m_blocks) + " block" +
            (dp.m_blocks > 1 ? "s" : "") + "; " + p.why;
    return p;
  }
  [[nodiscard]] archdb::tuning_key tuning_key(const archdb::device_desc& d) const override {
    if (context_ > 0) return archdb::tuning_key_of(d, "attention_decode", plan(d), "decode_d" + std::to_string(pb_.head_dim));
    return archdb::tuning_key_of(d, "attention", plan(d), attention::tuning_bucket(pb_));
  }

  [[nodiscard]] std::vector<manifest_entry> manifest(archdb::arch a) const override {
    // The kernels are attn_fwd_kernel<T, D, BM, BN, Threads, Stages> (tiled_mma, attention_agent.hpp):
    // "attn_fwd_kernelI<T>Li<D>ELi<BM>ELi<BN>ELi<Threads>ELi<S>E", and attn_fwd_ws_kernel<T, D, BM, BN,
    // Stages, Persistent> (ws_wgmma_tma, attention_ws.hpp, in an sm_90a build only):
    // "attn_fwd_ws_kernelI<T>Li<D>ELi<BM>ELi<BN>ELi<S>ELb<0|1>E".
    // Planned resources: plan_attention's candidates on a device of the arch (dynamic smem included).
    std::vector<manifest_entry> out;
    const archdb::device_desc* dev = first_device_of(a);
    if (!dev) return out;
    const auto fam = archdb::traits(a).vendor_id == archdb::vendor::nvidia ? attention::family::nvidia : attention::family::amd;
    for (const auto& t : attn_dtypes)
      for (const int hd : head_dims) {
        attention::attention_problem pr;
        pr.type = t.type;
        pr.head_dim = hd;
        pr.ws_compiled = archdb::traits(a).has_wgmma && archdb::traits(a).has_tma;  // a build for this arch alone (the compile matrix's)
        const archdb::plan p = plan_attention(*dev, pr);
        const auto pols = attention::candidates(fam, pr.ws_compiled, hd);
        for (std::size_t i = 0; i < p.all.size() && i < pols.size(); ++i) {
          const auto& pol = pols[i];
          manifest_entry e;
          e.family = "attention";
          e.candidate = p.all[i].name;
          e.instance = p.all[i].name;
          if (pol.strat == attention::strategy::ws_wgmma_tma)
            e.symbol = std::string("attn_fwd_ws_kernelI") + t.mangled + "Li" + std::to_string(hd) + "ELi" +
                       std::to_string(pol.block_m) + "ELi" + std::to_string(pol.block_n) + "ELi" +
                       std::to_string(pol.stages) + "ELb" + (pol.persistent ? "1" : "0") + "E";
          else
            e.symbol = std::string("attn_fwd_kernelI") + t.mangled + "Li" + std::to_string(hd) + "ELi" +
                       std::to_string(pol.block_m) + "ELi" + std::to_string(pol.block_n) + "ELi" +
                       std::to_string(pol.block_threads) + "ELi" + std::to_string(pol.stages) + "E";
          e.planned = p.all[i].res;
          e.declares_spills = attention::declares_spills(a, pol, hd);
          e.min_registers = pol.block_m * (hd + pol.block_n) / pol.block_threads;  // O and S, fp32
          out.push_back(std::move(e));
        }
      }
    // Decode: attn_decode_kernel<T, D, BM, BN, Threads, Stages> (attention_decode.hpp); the planned dynamic shared
    // memory is the larger of the two cache formats' (16-bit and FP8 differ by target and stages).
    for (const auto& t : attn_dtypes)
      for (const int hd : attention::decode_head_dims) {
        attention::decode_problem pr;
        pr.type = pr.kv_type = t.type;
        pr.head_dim = hd;
        const archdb::plan p = attention::plan_decode(*dev, pr).choice;
        const auto pols = attention::decode_candidates(fam, hd);
        for (std::size_t i = 0; i < p.all.size() && i < pols.size(); ++i) {
          const auto& pol = pols[i];
          manifest_entry e;
          e.family = "attention";
          e.candidate = p.all[i].name;
          e.instance = p.all[i].name;
          e.symbol = std::string("attn_decode_kernelI") + t.mangled + "Li" + std::to_string(hd) + "ELi" +
                     std::to_string(pol.block_m) + "ELi" + std::to_string(pol.block_n) + "ELi" +
                     std::to_string(pol.block_threads) + "ELi" + std::to_string(pol.stages) + "E";
          e.planned = p.all[i].res;
          e.planned.dynamic_smem = std::max(attention::decode_smem_bytes(pol, hd, 2, false, attention::stages_p(fam)),
                                            attention::decode_smem_bytes(pol, hd, 2, true, attention::stages_p(fam)));
          e.declares_spills = attention::decode_declares_spills(a, pol, hd);
          e.min_registers = pol.block_m * hd / pol.block_threads;  // O, fp32
          out.push_back(std::move(e));
        }
      }
    return out;
  }

  status prepare(const stream& s, std::uint64_t seed) override {
    if (context_ > 0)
      return unsupported("attention --context: pk run/tune measure the forward pass; decode is measured by "
                         "bench/attention/bench_decode.py (its --sweep-splits mode checks the planned split count)");
    const std::int64_t nq = std::int64_t{pb_.batch} * pb_.seqlen_q * pb_.heads_q * pb_.head_dim;
    const std::int64_t nk = std::int64_t{pb_.batch} * pb_.seqlen_k * pb_.heads_kv * pb_.head_dim;
    std::uint64_t st = seed;
    const auto fill = [&](std::vector<float>& v, std::int64_t n) {
      v.resize(static_cast<std::size_t>(n));
      for (auto& x : v) {
        st += 0x9e3779b97f4a7c15ull;
        std::uint64_t z = st;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x = round_to(pb_.type, static_cast<float>(static_cast<double>(z >> 40) * 0x1p-23 - 1.0));
      }
    };
    reference_ready_ = false;
    fill(q_, nq);
    fill(k_, nk);
    fill(v_, nk);
    PK_TRY(upload(s, q_, dq_));
    PK_TRY(upload(s, k_, dk_));
    PK_TRY(upload(s, v_, dv_));
    PK_TRY(dout_.allocate(s, static_cast<std::size_t>(nq)));
    return poison(s);
  }

  status poison(const stream& s) override {
    PK_TRY(synchronize(s));
    return dout_.upload(std::vector<std::uint16_t>(q_.size(), 0x7fc0u));  // NaN in bf16 and f16 bits alike
  }

  status launch(const stream& s, int index) override {
    attention_args a;
    if (index >= 0) {
      // The candidate names, planned once per device: planning inside the timed region would add its host
      // time to small problems' times.
      if (candidate_names_device_ != s.device().name) {
        candidate_names_.clear();
        for (const auto& e : plan(s.device()).all) candidate_names_.push_back(e.name);
        candidate_names_device_ = s.device().name;
      }
      if (static_cast<std::size_t>(index) >= candidate_names_.size())
        return invalid_argument("attention: candidate index " + std::to_string(index) + " out of range");
      a.policy = candidate_names_[static_cast<std::size_t>(index)].c_str();
    }
    a.q = view(dq_.data(), pb_.seqlen_q, pb_.heads_q);
    a.k = view(dk_.data(), pb_.seqlen_k, pb_.heads_kv);
    a.v = view(dv_.data(), pb_.seqlen_k, pb_.heads_kv);
    a.out = view(dout_.data(), pb_.seqlen_q, pb_.heads_q);
    a.causal = pb_.causal;
    a.window_left = pb_.window_left;
    a.window_right = pb_.window_right;
    return attention_forward(s, a);
  }

  status verify(const stream& s, const archdb::plan&, verification& v) override {
    // FlashAttention's two-reference rule (STYLE.md §2.7): ref in double, naive at the kernel's precision
    // in another order; max|out - ref| <= 2 max|naive - ref| + atol_noise, atol_noise = 2 max|(ref + 0.3 - 0.3) - ref|
    // in the output type. Fully masked rows must be exactly 0. The references are computed once per
    // prepare (they do not depend on the plan), on every query row or, for large problems, on a sample.
    std::vector<std::uint16_t> out;
    PK_TRY(synchronize(s));
    PK_TRY(dout_.download(out));
    if (!reference_ready_) compute_reference();
    const std::size_t row = static_cast<std::size_t>(pb_.heads_q) * pb_.head_dim;
    double err = 0;
    bool finite = true;
    for (std::size_t r = 0; r < checked_rows_.size(); ++r)
      for (std::size_t k = 0; k < row; ++k) {
        const double got = from_bits(pb_.type, out[static_cast<std::size_t>(checked_rows_[r]) * row + k]);
        finite = finite && std::isfinite(got);
        err = std::max(err, std::fabs(got - ref_rows_[r * row + k]));
      }
    const double bound = 2 * err_naive_ + 2 * noise_;
    const std::int64_t rows = std::int64_t{pb_.batch} * pb_.seqlen_q;
    v.pass = finite && err <= bound;
    v.detail = {{"abs_error", err},
                {"bound", bound},           {"naive_error", err_naive_}, {"noise", 2 * noise_},
                {"rows_checked", checked_rows_.size()}, {"rows", rows},
                {"rule", "max|out - ref| <= 2 max|naive - ref| + 2 max|(ref + 0.3 - 0.3) - ref| (FlashAttention); ref in double" +
                             (static_cast<std::int64_t>(checked_rows_.size()) < rows
                                  ? "; on " + std::to_string(checked_rows_.size()) + " of " + std::to_string(rows) +
                                        " query rows (evenly spaced, the last included: the CPU reference of every row would take too long)"
                                  : std::string{})}};
    return {};
  }

  // `pk bench attention`: bf16 training shapes, 16k tokens per batch (batch x seqlen) and 2048 channels
  // (heads x head_dim), head_dim 64 and 128, seqlen 1k/4k/16k, causal or not. --quick: two small problems
  // the emulator runs in seconds with every candidate.
  [[nodiscard]] std::vector<bench_problem> bench_grid(bool quick) const override {
    constexpr int tokens = 16384, channels = 2048;
    std::vector<bench_problem> g;
    const auto add = [&](int d, int seqlen, int batch, int heads, bool causal) {
      const std::string sl = seqlen % 1024 == 0 ? std::to_string(seqlen / 1024) + "k" : std::to_string(seqlen);
      bench_problem p{"d" + std::to_string(d) + " s" + sl + " b" + std::to_string(batch) + (causal ? " causal" : ""),
                      {"--dtype", "bf16", "--batch", std::to_string(batch), "--heads", std::to_string(heads), "--head-dim",
                       std::to_string(d), "--seqlen-q", std::to_string(seqlen)}};
      if (causal) p.args.emplace_back("--causal");
      g.push_back(std::move(p));
    };
    if (quick) {
      for (const bool causal : {false, true}) add(64, 128, 1, 2, causal);
      return g;
    }
    for (const int d : {64, 128})
      for (const int seqlen : {1024, 4096, 16384})
        for (const bool causal : {false, true}) add(d, seqlen, tokens / seqlen, channels / d, causal);
    return g;
  }
  [[nodiscard]] bench_bound bound() const override { return bench_bound::matrix; }
  //! 4 flops per (query, key) pair seen and head channel (two matrix products of 2 flops per multiply-add);
  //! masked pairs are not counted.
  [[nodiscard]] double flops() const override {
    double pairs = 0;
    for (std::int64_t i = 0; i < pb_.seqlen_q; ++i) {
      const auto [lo, hi] = keys_of(i);
      if (hi >= lo) pairs += static_cast<double>(hi - lo + 1);
    }
    return 4.0 * pb_.batch * pb_.heads_q * pb_.head_dim * pairs;
  }

  [[nodiscard]] double bytes_moved() const override {
    return 2.0 * (q_.size() + k_.size() + v_.size() + q_.size());
  }

 private:
  //! The keys query row i sees, [lo, hi] (empty when hi < lo): the mask's bottom-right aligned diagonal.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> keys_of(std::int64_t i) const {
    const std::int64_t diag = pb_.seqlen_k - pb_.seqlen_q;
    const std::int64_t right = pb_.causal ? 0 : pb_.window_right;
    const std::int64_t hi = right >= 0 ? std::min(pb_.seqlen_k - 1, i + diag + right) : pb_.seqlen_k - 1;
    const std::int64_t lo = pb_.window_left >= 0 ? std::max<std::int64_t>(0, i + diag - pb_.window_left) : 0;
    return {lo, hi};
  }

  //! The references of the checked query rows: each row on its own (its visible keys, unmasked, in the
  //! same order as the whole-sequence reference), rows spread over the hardware threads.
  void compute_reference() {
    const std::int64_t rows = std::int64_t{pb_.batch} * pb_.seqlen_q;
    // Multiply-adds of the two references of one row: QK^T and PV over every key, in double and in float.
    const double per_row = 4.0 * pb_.heads_q * pb_.head_dim * static_cast<double>(pb_.seqlen_k);
    const std::int64_t affordable = std::max<std::int64_t>(min_checked_rows, static_cast<std::int64_t>(reference_budget / per_row));
    const std::int64_t count = std::min(rows, affordable);
    checked_rows_.clear();
    for (std::int64_t k = 0; k < count; ++k)
      checked_rows_.push_back(count == rows ? k : (count == 1 ? rows - 1 : k * (rows - 1) / (count - 1)));
    const std::size_t row = static_cast<std::size_t>(pb_.heads_q) * pb_.head_dim;
    ref_rows_.assign(checked_rows_.size() * row, 0.0);
    const unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(count)));
    std::vector<double> naive(threads, 0.0), noise(threads, 0.0);
    const auto work = [&](unsigned t) {
      const auto rnd = [&](float x) { return round_to(pb_.type, x); };
      const double scale = 1.0 / std::sqrt(static_cast<double>(pb_.head_dim));
      const std::size_t kv_row = static_cast<std::size_t>(pb_.heads_kv) * pb_.head_dim;
      std::vector<double> ref, ref_lse, nv, nv_lse;
      for (std::size_t r = t; r < checked_rows_.size(); r += threads) {
        const std::int64_t b = checked_rows_[r] / pb_.seqlen_q, i = checked_rows_[r] % pb_.seqlen_q;
        const auto [lo, hi] = keys_of(i);
        if (hi < lo) continue;  // fully masked: the output must be 0 (ref_rows_ holds 0)
        const float* q = q_.data() + static_cast<std::size_t>(checked_rows_[r]) * row;
        const std::size_t k0 = (static_cast<std::size_t>(b) * pb_.seqlen_k + static_cast<std::size_t>(lo)) * kv_row;
        const attention::reference::mask m{1, static_cast<int>(hi - lo + 1), false, -1, -1};
        attention::reference::forward(q, k_.data() + k0, v_.data() + k0, pb_.heads_q, pb_.heads_kv, pb_.head_dim, m, scale,
                                      false, rnd, ref, ref_lse);
        attention::reference::forward(q, k_.data() + k0, v_.data() + k0, pb_.heads_q, pb_.heads_kv, pb_.head_dim, m, scale,
                                      true, rnd, nv, nv_lse);
        for (std::size_t k = 0; k < row; ++k) {
          ref_rows_[r * row + k] = ref[k];
          naive[t] = std::max(naive[t], std::fabs(nv[k] - ref[k]));
          const float x = rnd(static_cast<float>(ref[k]));
          noise[t] = std::max(noise[t], std::fabs(static_cast<double>(rnd(rnd(x + 0.3f) - 0.3f)) - x));
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& th : pool) th.join();
    err_naive_ = *std::max_element(naive.begin(), naive.end());
    noise_ = *std::max_element(noise.begin(), noise.end());
    reference_ready_ = true;
  }

  tensor_view view(const void* data, std::int64_t seqlen, int heads) const {
    tensor_view t;
    t.data = data;
    t.type = pb_.type;
    t.rank = 4;
    t.shape[0] = pb_.batch;
    t.shape[1] = seqlen;
    t.shape[2] = heads;
    t.shape[3] = pb_.head_dim;
    t.stride[3] = 1;
    t.stride[2] = pb_.head_dim;
    t.stride[1] = std::int64_t{heads} * pb_.head_dim;
    t.stride[0] = seqlen * heads * pb_.head_dim;
    return t;
  }
  status upload(const stream& s, const std::vector<float>& h, device_buffer<std::uint16_t>& d) const {
    std::vector<std::uint16_t> bits(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) bits[i] = to_bits(pb_.type, h[i]);
    PK_TRY(d.allocate(s, bits.size()));
    return d.upload(bits);
  }

  std::string dtype_ = "bf16";
  int heads_kv_ = 0;
  std::int64_t seqlen_k_ = 0;
  attention::attention_problem pb_{dtype::bf16, 1, 4, 4, 64, 256, 256, false, -1, -1};
  std::int64_t context_ = 0;  // > 0: a decode problem
  int page_size_ = 0;
  std::string kv_dtype_;
  attention::decode_problem dpb_;
  const attn_dtype* dt_ = nullptr;
  std::vector<float> q_, k_, v_;
  std::vector<std::string> candidate_names_;  // of the plan on candidate_names_device_ (launch)
  std::string candidate_names_device_;
  // The CPU reference of the prepared inputs (compute_reference): checked query rows (flat batch x seqlen_q
  // indices) and their outputs [rows, heads_q, head_dim]. Every row while the two references of all rows
  // cost at most `reference_budget` multiply-adds (2^32: seconds on one core, a few seconds spread over the
  // cores for a 16k-token, 2048-channel problem), else evenly spaced rows, at least `min_checked_rows`.
  static constexpr double reference_budget = 0x1p32;
  static constexpr std::int64_t min_checked_rows = 16;
  bool reference_ready_ = false;
  std::vector<std::int64_t> checked_rows_;
  std::vector<double> ref_rows_;
  double err_naive_ = 0, noise_ = 0;
  device_buffer<std::uint16_t> dq_, dk_, dv_, dout_;
};

}  // namespace

std::unique_ptr<family> make_attention_family() { return std::make_unique<attention_family>(); }

}  // namespace pk::tool
#endif
