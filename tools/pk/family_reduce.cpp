// `pk plan|tune|run|candidates reduce`: device-wide reductions (pk::reduce; sum, min, max).
#include "bench_gpu.hpp"
#include "family.hpp"

#include <pk/portable/numeric.hpp>
#include <pk/reduction/norm.hpp>
#include <pk/reduction/reduce.hpp>
#include <pk/reduction/reduce_policy.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

namespace pk::tool {
namespace {

using reduction::dtype;

//! What the tool offers: the ops and element types pk::reduce accepts for them (reduce.hpp).
struct reduce_dtype {
  const char* name;
  dtype type;
  const char* mangled;   //!< Itanium mangling of T inside a pk:: kernel name (pk::fp16 is "NS_4fp16E": S_ = pk)
  double unit_roundoff;  //!< of the accumulator (fp32 for f16/bf16/f32, fp64 for f64); 0 for integers
  double out_roundoff;   //!< of the output type (the result is rounded to the element type once)
};
constexpr reduce_dtype reduce_dtypes[] = {
    {"f32", dtype::f32, "f", 0x1p-24, 0x1p-24},          {"f64", dtype::f64, "d", 0x1p-53, 0x1p-53},
    {"f16", dtype::f16, "NS_4fp16E", 0x1p-24, 0x1p-11}, {"bf16", dtype::bf16, "NS_4bf16E", 0x1p-24, 0x1p-8},
    {"i32", dtype::i32, "i", 0, 0},                      {"i64", dtype::i64, "l", 0, 0},
};
constexpr const char* reduce_ops[] = {"sum", "min", "max"};

//! Parses a count written as an integer or in scientific notation ("100000000", "1e8").
bool parse_count(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < 0 || v != std::floor(v) || v > 0x1p62)
    return false;
  out = static_cast<std::int64_t>(v);
  return true;
}

int ceil_log2(std::int64_t v) {
  int k = 0;
  while ((std::int64_t{1} << k) < v) ++k;
  return k;
}

// splitmix64: fast, seedable; fresh random data for 1e8 elements in well under a second.
std::uint64_t next(std::uint64_t& state) {
  state += 0x9e3779b97f4a7c15ull;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class reduce_family final : public family {
 public:
  [[nodiscard]] std::string name() const override { return "reduce"; }
  [[nodiscard]] std::string summary() const override {
    return "device-wide reduction, one launch (pk::reduce: --op sum|min|max); " +
           std::to_string(reduction::reduce_candidates.size()) + " candidates";
  }

  void add_problem_options(CLI::App& cmd) override {
    cmd.add_option("--n", n_text_, "number of elements; integer or scientific notation (1e8)")->capture_default_str();
    cmd.add_option("--dtype", dtype_, "element type: " + list(dtype_names()))->capture_default_str();
    cmd.add_option("--op", op_, "operation: sum, min, max")->capture_default_str();
  }

  status validate() override {
    if (!parse_count(n_text_, n_))
      return invalid_argument("--n " + n_text_ + ": must be a non-negative integer below 2^62 (e.g. 100000000 or 1e8)");
    dt_ = nullptr;
    for (const auto& d : reduce_dtypes)
      if (dtype_ == d.name) dt_ = &d;
    if (!dt_) return unsupported("--dtype " + dtype_ + ": reduce supports " + list(dtype_names()));
    if (op_ == "sum") rop_ = reduce_op::sum;
    else if (op_ == "min") rop_ = reduce_op::min;
    else if (op_ == "max") rop_ = reduce_op::max;
    else return unsupported("--op " + op_ + ": the tool runs sum, min, max");
    return {};
  }

  [[nodiscard]] std::string problem_text() const override {
    return "op=" + op_ + " n=" + std::to_string(n_) + " dtype=" + dtype_;
  }
  [[nodiscard]] nlohmann::json problem_json() const override { return {{"op", op_}, {"n", n_}, {"dtype", dtype_}}; }

  [[nodiscard]] archdb::plan plan(const archdb::device_desc& d) const override {
    return reduction::plan_reduce(d, n_, reduction::size_of(dt_->type));
  }
  [[nodiscard]] archdb::tuning_key tuning_key(const archdb::device_desc& d) const override {
    const int bytes = reduction::size_of(dt_->type);
    return archdb::tuning_key_of(d, "reduce", reduction::plan_reduce(d, n_, bytes), archdb::size_bucket(n_, bytes));
  }

  [[nodiscard]] std::vector<manifest_entry> manifest(archdb::arch a) const override {
    // The kernel is reduce_single_pass_kernel<BlockThreads, Items, Vec, T, ...>
    // (kernels/reduction/include/pk/reduction/detail/reduce_agent.hpp); its Itanium-mangled name holds
    // "reduce_single_pass_kernelILi<B>ELi<I>ELi<V>E<T>". The planned resources are the planner's (from
    // a plan on any device of the arch: the candidate list does not depend on the device).
    std::vector<manifest_entry> out;
    const archdb::device_desc* dev = first_device_of(a);
    if (!dev) dev = &archdb::all_devices().front();
    // The element types compiled (reduce.hpp): those of the run command, and i8/u8 for min/max/argmin/argmax.
    struct compiled {
      const char* name;
      int bytes;
      const char* mangled;
    };
    std::vector<compiled> types;
    for (const auto& d : reduce_dtypes) types.push_back({d.name, reduction::size_of(d.type), d.mangled});
    types.push_back({"i8", 1, "a"});
    types.push_back({"u8", 1, "h"});
    for (const auto& d : types) {
      const int bytes = d.bytes;
      // Per-segment kernels (segmented reduce, unit-stride axes, row operations):
      // segment_reduce_kernel<BlockThreads, GroupThreads, Unroll, T, ...>, planned by plan_segmented.
      const archdb::plan ps = reduction::plan_segmented(*dev, 1, 1, bytes);
      for (std::size_t i = 0; i < ps.all.size() && i < reduction::segment_candidates.size(); ++i) {
        const reduction::segment_policy& pol = reduction::segment_candidates[i];
        manifest_entry e;
        e.family = "reduce";
        e.candidate = ps.all[i].name;
        e.instance = ps.all[i].name + "_" + d.name;
        e.symbol = "segment_reduce_kernelILi" + std::to_string(pol.block_threads) + "ELi" +
                   std::to_string(pol.group_threads) + "ELi" + std::to_string(pol.unroll) + "E" + d.mangled;
        e.planned = ps.all[i].res;
        e.declares_spills = declares(e.symbol, a);
        out.push_back(std::move(e));
      }
      // The even split of pk::segmented_reduce: segment_split_kernel<BlockThreads, Unroll, BlocksPerSm, T, ...>,
      // the first candidates of plan_segmented_reduce.
      const archdb::plan pv = reduction::plan_segmented_reduce(*dev, 1, 1, bytes);
      for (std::size_t i = 0; i < pv.all.size() && i < reduction::split_candidates.size(); ++i) {
        const reduction::split_policy& pol = reduction::split_candidates[i];
        manifest_entry e;
        e.family = "reduce";
        e.candidate = pv.all[i].name;
        e.instance = pv.all[i].name + "_" + d.name;
        e.symbol = "segment_split_kernelILi" + std::to_string(pol.block_threads) + "ELi" +
                   std::to_string(reduction::split_unroll(pol, static_cast<std::size_t>(bytes))) + "ELi" +
                   std::to_string(pol.blocks_per_sm) + "E" + d.mangled;
        e.planned = pv.all[i].res;
        e.declares_spills = declares(e.symbol, a);
        out.push_back(std::move(e));
      }
      const archdb::plan p = reduction::plan_reduce(*dev, 1, bytes);
      for (std::size_t i = 0; i < p.all.size() && i < reduction::reduce_candidates.size(); ++i) {
        const reduction::reduce_policy& pol = reduction::reduce_candidates[i];
        manifest_entry e;
        e.family = "reduce";
        e.candidate = p.all[i].name;
        e.instance = p.all[i].name + "_" + d.name;
        e.symbol = "reduce_single_pass_kernelILi" + std::to_string(pol.block_threads) + "ELi" +
                   std::to_string(reduction::scaled_items(pol, static_cast<std::size_t>(bytes))) + "ELi" +
                   std::to_string(reduction::scaled_vector(pol, static_cast<std::size_t>(bytes))) + "E" + d.mangled;
        e.planned = p.all[i].res;
        e.declares_spills = declares(e.symbol, a);
        out.push_back(std::move(e));
      }
    }
    // The row operations (norm.hpp): rows_onchip_kernel<BlockThreads, GroupThreads, Vectors, Stages, T, Accum,
    // row_kind> / rows_stream_kernel<BlockThreads, GroupThreads, Vectors, T, Accum, row_kind, Cached>, an instance per
    // dtype of the rows instance table (f32, f64, f16, bf16) and per operation (row_kind's order is row_op's),
    // planned by plan_rows; staged instances where row_compiled says they exist.
    for (const auto& d : types) {
      const std::string name = d.name;
      if (name != "f32" && name != "f64" && name != "f16" && name != "bf16") continue;
      const char* accum = name == "f64" ? "d" : "f";
      constexpr reduction::row_op ops[] = {reduction::row_op::softmax, reduction::row_op::log_softmax, reduction::row_op::layer_norm,
                                           reduction::row_op::rms_norm, reduction::row_op::mean_var};
      constexpr const char* op_names[] = {"softmax", "log_softmax", "layer_norm", "rms_norm", "mean_var"};
      // A streaming policy's instance that keeps each row's head in shared memory (rows_stream_kernel<..., true>)
      // is planned with its own registers and cache: the plan of rows that engage it (more in flight than half
      // of any L2, wider than any cache).
      constexpr std::int64_t cached_rows = std::int64_t{1} << 20, cached_cols = std::int64_t{1} << 24;
      for (int k = 0; k < 5; ++k) {
        const archdb::plan pr = reduction::plan_rows(*dev, ops[k], 1, 1, d.bytes);
        const archdb::plan pc = reduction::plan_rows(*dev, ops[k], cached_rows, cached_cols, d.bytes);
        for (std::size_t i = 0; i < pr.all.size() && i < reduction::row_candidates.size(); ++i) {
          const reduction::row_policy& pol = reduction::row_candidates[i];
          if (!reduction::row_compiled(pol, d.bytes, archdb::traits(a).has_async_copy)) continue;
          const bool cacheable = reduction::row_cacheable(pol, reduction::welford_state(ops[k]));
          for (const bool cached : {false, true}) {
            if (cached && !cacheable) continue;
            manifest_entry e;
            e.family = "reduce";
            e.candidate = pr.all[i].name;
            e.instance = pr.all[i].name + "_" + op_names[k] + (cached ? "_cached_" : "_") + d.name;
            e.symbol = std::string(reduction::on_chip(pol) ? "rows_onchip_kernelILi" : "rows_stream_kernelILi") +
                       std::to_string(pol.block_threads) + "ELi" + std::to_string(pol.group_threads) + "ELi" +
                       std::to_string(reduction::row_vectors(pol, d.bytes)) + "E" +
                       (reduction::on_chip(pol) ? "Li" + std::to_string(reduction::staged(pol) ? pol.stages : 0) + "E" : "") +
                       d.mangled + accum + "LNS_9reduction8row_kindE" + std::to_string(k) + "E" +
                       (reduction::on_chip(pol) ? "" : cached ? "Lb1E" : "Lb0E");
            e.planned = (cached ? pc : pr).all[i].res;
            e.declares_spills = declares(e.symbol, a);
            out.push_back(std::move(e));
          }
        }
      }
    }
    // The reproducible sums (options.reproducible): repro_sum_kernel<BlockThreads, T> for f32 and f64,
    // planned by plan_reduce_reproducible.
    for (const auto& d : types) {
      if (std::string(d.name) != "f32" && std::string(d.name) != "f64") continue;
      const archdb::plan pr = reduction::plan_reduce_reproducible(*dev, 1, d.bytes);
      for (std::size_t i = 0; i < pr.all.size() && i < reduction::reproducible_candidates.size(); ++i) {
        manifest_entry e;
        e.family = "reduce";
        e.candidate = pr.all[i].name;
        e.instance = pr.all[i].name + "_" + d.name;
        e.symbol = "repro_sum_kernelILi" + std::to_string(reduction::reproducible_candidates[i]) + "E" + d.mangled;
        e.planned = pr.all[i].res;
        e.declares_spills = declares(e.symbol, a);
        out.push_back(std::move(e));
      }
    }
    return out;
  }

  [[nodiscard]] std::vector<std::string> declared_spills(archdb::arch a) const override {
    std::vector<std::string> out;
    for (const reduction::spill_declaration& d : reduction::declared_spilling_kernels)
      if (reduction::declares_on(d, archdb::name_of(a))) out.emplace_back(d.kernel);
    return out;
  }
  [[nodiscard]] bool declares(const std::string& symbol, archdb::arch a) const {
    for (const std::string& k : declared_spills(a))
      if (symbol.find(k) != std::string::npos) return true;
    return false;
  }

  status prepare(const stream& s, std::uint64_t seed) override {
    switch (dt_->type) {
      case dtype::f32: return fill<float>(s, seed);
      case dtype::f64: return fill<double>(s, seed);
      case dtype::f16: return fill<fp16>(s, seed);
      case dtype::bf16: return fill<bf16>(s, seed);
      case dtype::i32: return fill<std::int32_t>(s, seed);
      case dtype::i64: return fill<std::int64_t>(s, seed);
      default: return unsupported("reduce: dtype " + dtype_);
    }
  }

  status poison(const stream& s) override {
    PK_TRY(synchronize(s));
    return out_.upload(std::vector<unsigned char>(sizeof(std::int64_t), 0xff));  // a NaN of every float width
  }

  status launch(const stream& s, int index) override {
    reduce_options opt;
    std::string forced;
    if (index >= 0) {
      if (static_cast<std::size_t>(index) >= reduction::reduce_candidates.size())
        return invalid_argument("reduce: candidate index " + std::to_string(index) + " out of range");
      forced = reduction::name_of(reduction::reduce_candidates[static_cast<std::size_t>(index)]);
      opt.policy = forced.c_str();
    }
    return reduce(s, rop_, dt_->type, in_.data(), n_, out_.data(), opt);
  }

  status verify(const stream& s, const archdb::plan& p, verification& v) override {
    std::vector<unsigned char> r;
    PK_TRY(synchronize(s));
    PK_TRY(out_.download(r));
    const double got = value_at(r.data());
    const double err = std::fabs(got - ref_);
    double bound = 0;
    std::string rule = "exact: integer arithmetic (int64 accumulation), or min/max select an input";
    if (rop_ == reduce_op::sum && dt_->unit_roundoff > 0) {
      // Rigorous first-order bound of the kernel's summation tree: each thread adds its grid-strided
      // items in sequence, the block combines in a tree, the last block adds `grid` partials (a strided
      // sequence per thread, then the tree). With depth k, |error| <= gamma_k * sum|x|,
      // gamma_k = k u / (1 - k u) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §4.2).
      const int bytes = reduction::size_of(dt_->type);
      const reduction::reduce_policy& pol = reduction::reduce_candidates[static_cast<std::size_t>(p.index)];
      const std::int64_t grid = n_ > 0 ? reduction::reduce_grid(s.device(), p, n_, bytes) : 1;
      const int items = reduction::scaled_items(pol, static_cast<std::size_t>(bytes));
      const std::int64_t tile = std::int64_t{pol.block_threads} * items;
      const std::int64_t tiles = (n_ + tile - 1) / tile;
      const std::int64_t depth = (tiles + grid - 1) / grid * items + 2 * ceil_log2(pol.block_threads) +
                                 (grid + pol.block_threads - 1) / pol.block_threads;
      const double ku = static_cast<double>(depth) * dt_->unit_roundoff;
      const double acc_bound = ku < 1 ? ku / (1 - ku) * abs_sum_ : std::numeric_limits<double>::infinity();
      // The accumulator is rounded once more to the element type (f16/bf16 outputs).
      bound = acc_bound + (std::fabs(ref_) + acc_bound) * (dt_->out_roundoff > dt_->unit_roundoff ? dt_->out_roundoff : 0.0);
      rule = "|result - reference| <= gamma_k * sum|x| (+ the output rounding for f16/bf16), k = " +
             std::to_string(depth) + " (items per thread + 2 block trees + partials per thread), u = accumulator unit roundoff";
    }
    v.pass = !std::isnan(got) && err <= bound;
    v.detail = {{"reference", ref_}, {"result", got},   {"abs_error", err},
                {"bound", bound},    {"sum_abs", abs_sum_}, {"rule", rule + "; reference in double / int64 on the CPU"}};
    return {};
  }

  [[nodiscard]] double bytes_moved() const override {
    return dt_ ? static_cast<double>(n_) * reduction::size_of(dt_->type) : 0;
  }

  // `pk bench reduce`: sum from L2-resident (2^20 elements, 4 MiB of f32) to far past any L2 (2^28, 1 GiB of
  // f32), f32 and bf16 (fp32 accumulation), and max at the two largest sizes. --quick: two sizes small
  // enough for the emulator (a few seconds for every candidate).
  [[nodiscard]] std::vector<bench_problem> bench_grid(bool quick) const override {
    std::vector<bench_problem> g;
    const auto add = [&](const char* op, const char* dt, int log2n) {
      g.push_back({std::string(op) + " " + dt + " 2^" + std::to_string(log2n),
                   {"--op", op, "--dtype", dt, "--n", std::to_string(std::int64_t{1} << log2n)}});
    };
    const std::vector<int> sum_sizes = quick ? std::vector<int>{12, 16} : std::vector<int>{20, 22, 24, 26, 28};
    const std::vector<int> max_sizes = quick ? std::vector<int>{16} : std::vector<int>{24, 28};
    for (const char* dt : {"f32", "bf16"}) {
      for (const int lg : sum_sizes) add("sum", dt, lg);
      for (const int lg : max_sizes) add("max", dt, lg);
    }
    return g;
  }

  status anchors(const stream& s, std::vector<bench_anchor>& out) override {
    out.clear();
    if (s.backend() != backend_kind::cuda || !have_cub()) return {};
    const std::string name = cub_reduce_name(rop_, dt_->type);
    if (name.empty()) return {};
    out.push_back({name, [this, s] { return cub_reduce(s, rop_, dt_->type, in_.data(), n_, out_.data(), cub_temp_); }});
    return {};
  }

 private:
  static std::vector<std::string> dtype_names() {
    std::vector<std::string> v;
    for (const auto& d : reduce_dtypes) v.emplace_back(d.name);
    return v;
  }
  static std::string list(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }

  template <class T>
  status fill(const stream& s, std::uint64_t seed) {
    const auto n = static_cast<std::size_t>(n_);
    std::vector<T> h(n);
    std::uint64_t state = seed;
    ref_ = 0;
    abs_sum_ = 0;
    std::int64_t iref = 0;  // integer sums: exact modulo 2^64, as the library accumulates
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (auto& x : h) {
      const std::uint64_t r = next(state);
      double xv;
      if constexpr (std::is_integral_v<T>) {
        x = static_cast<T>(static_cast<std::int64_t>(r % 2001) - 1000);  // [-1000, 1000]
        iref = static_cast<std::int64_t>(static_cast<std::uint64_t>(iref) + static_cast<std::uint64_t>(x));
        xv = static_cast<double>(x);
      } else {
        const float f = static_cast<float>(static_cast<double>(r >> 40) * 0x1p-23 - 1.0);  // [-1, 1), 24 bits
        x = T(f);                                                                            // rounds for f16/bf16
        xv = static_cast<double>(static_cast<float>(x));
        if constexpr (std::is_same_v<T, double>) {
          x = static_cast<double>(r >> 11) * 0x1p-52 - 1.0;  // [-1, 1), 53 bits
          xv = x;
        }
      }
      ref_ += xv;
      abs_sum_ += std::fabs(xv);
      lo = std::min(lo, xv);
      hi = std::max(hi, xv);
    }
    if constexpr (std::is_integral_v<T>) ref_ = static_cast<double>(static_cast<T>(iref));  // narrowed modulo 2^bits
    if (rop_ == reduce_op::min) ref_ = n ? lo : identity_of<T>(true);
    if (rop_ == reduce_op::max) ref_ = n ? hi : identity_of<T>(false);
    PK_TRY(in_.allocate(s, n * sizeof(T)));
    PK_TRY(out_.allocate(s, sizeof(std::int64_t)));
    std::vector<unsigned char> bytes(n * sizeof(T));
    if (n) std::memcpy(bytes.data(), h.data(), bytes.size());
    PK_TRY(in_.upload(bytes));
    return poison(s);
  }

  template <class T>
  static double identity_of(bool min) {
    if constexpr (std::is_integral_v<T>)
      return min ? static_cast<double>(std::numeric_limits<T>::max()) : static_cast<double>(std::numeric_limits<T>::lowest());
    else
      return min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }

  double value_at(const unsigned char* p) const {
    switch (dt_->type) {
      case dtype::f32: return load<float>(p);
      case dtype::f64: return load<double>(p);
      case dtype::f16: return static_cast<float>(load<fp16>(p));
      case dtype::bf16: return static_cast<float>(load<bf16>(p));
      case dtype::i32: return static_cast<double>(load<std::int32_t>(p));
      case dtype::i64: return static_cast<double>(load<std::int64_t>(p));
      default: return std::numeric_limits<double>::quiet_NaN();
    }
  }
  template <class T>
  static T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }

  std::string n_text_ = "16777216";  // 2^24: 64 MiB of fp32 (seconds on the emulator, microseconds on a GPU)
  std::string dtype_ = "f32";
  std::string op_ = "sum";
  std::int64_t n_ = 0;
  const reduce_dtype* dt_ = nullptr;
  reduce_op rop_ = reduce_op::sum;
  double ref_ = 0, abs_sum_ = 0;
  device_buffer<unsigned char> in_, out_, cub_temp_;
};

}  // namespace

std::unique_ptr<family> make_reduce_family() { return std::make_unique<reduce_family>(); }

}  // namespace pk::tool
