#include "bench.hpp"

#include "bench_gpu.hpp"
#include "build_info.hpp"
#include "measure.hpp"
#include "svg_plot.hpp"
#include <pk/timing.hpp>

#include <pk/archdb/device.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace pk::tool {
namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

// Untimed runs before each measurement on a GPU (clocks up, caches and lazy allocations warm; CUB sizes its
// temporary storage on the first call) and timed runs, as `pk tune`.
constexpr int gpu_warmup = 3;
constexpr int gpu_reps = 25;
// The copy roofline: 4 GiB each way on a GPU (far past any L2, as bench/reduction/bench_reduce.cu and
// ANCHORS.md); 64 MiB on the emulator (a host memcpy: the figure only fills the column).
constexpr std::size_t gpu_copy_bytes = std::size_t{1} << 32;
constexpr std::size_t emulator_copy_bytes = std::size_t{1} << 26;
// The matrix roofline: a bf16 GEMM of 8192^3 (large enough for cuBLAS to reach its peak on an H100/H200).
constexpr int gemm_size = 8192;

std::string sig(double v, int digits = 4) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}
std::string fixed(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}
//! A duration in the unit that keeps it readable: "38.2 us", "77.1 ms", "1.52 s".
std::string fmt_time(double us) {
  if (us >= 1e6) return sig(us * 1e-6, 3) + " s";
  if (us >= 1e3) return sig(us * 1e-3, 3) + " ms";
  return sig(us, 3) + " us";
}

//! The roofline the family's rows are compared with.
struct roofline {
  double value = 0;    //!< in the family's unit (GB/s or TFLOP/s); 0: unknown
  std::string source;  //!< "copy", "cuBLAS GEMM" or "datasheet"
  std::string detail;  //!< how it was obtained
  timing t;            //!< when measured
};

struct bench_row {
  bench_problem problem;
  json problem_json;
  std::vector<measured_run> runs;  //!< [0]: the library's plan, then every fitting candidate forced
  int best = -1;                   //!< index in runs of the fastest verified forced candidate
  std::vector<std::pair<std::string, timing>> anchors;
  double work = 0;                 //!< bytes or flops of one run
  std::vector<std::string> wrong;  //!< runs whose result failed the check
  std::string error;               //!< a setup, launch or backend error
};

//! Progress on stderr: one redrawn line on a terminal, plain lines otherwise.
class progress {
 public:
  explicit progress(std::size_t problems) : problems_(problems), tty_(isatty(STDERR_FILENO) != 0), t0_(clock_type::now()) {}
  void update(std::size_t problem, const std::string& label, std::size_t k, std::size_t n, const std::string& what) {
    const double s = std::chrono::duration<double>(clock_type::now() - t0_).count();
    std::ostringstream o;
    o << "problem " << problem + 1 << "/" << problems_ << " " << label << " | " << k + 1 << "/" << n << " " << what << " | "
      << fixed(s, 1) << " s";
    if (!tty_) {
      std::cerr << "pk bench: " << o.str() << "\n";
      return;
    }
    constexpr int bar = 24;  // characters of the bar
    const double frac = (static_cast<double>(problem) + static_cast<double>(k) / static_cast<double>(std::max<std::size_t>(n, 1))) /
                        static_cast<double>(std::max<std::size_t>(problems_, 1));
    const int filled = static_cast<int>(frac * bar);
    std::cerr << "\r\033[2K[" << std::string(static_cast<std::size_t>(filled), '#') << std::string(static_cast<std::size_t>(bar - filled), '.')
              << "] " << o.str() << std::flush;
  }
  void note(const std::string& line) {
    if (tty_) std::cerr << "\r\033[2K";
    std::cerr << "pk bench: " << line << "\n";
  }
  void finish() {
    if (tty_) std::cerr << "\r\033[2K" << std::flush;
  }

 private:
  std::size_t problems_;
  bool tty_;
  clock_type::time_point t0_;
};

status measure_roofline(const stream& s, bench_bound bound, int warmup, int reps, roofline& r) {
  const bool emulated = s.backend() == backend_kind::host;
  if (bound == bench_bound::memory) {
    const std::size_t bytes = emulated ? emulator_copy_bytes : gpu_copy_bytes;
    device_buffer<unsigned char> a, b;
    PK_TRY(a.allocate(s, bytes));
    PK_TRY(b.allocate(s, bytes));
    PK_TRY(memset_async(s, a.data(), 1, bytes));
    PK_TRY(time_work(s, warmup, reps, [&] { return copy_async(s, b.data(), a.data(), bytes, copy_kind::device_to_device); }, r.t));
    r.value = r.t.median_us > 0 ? 2.0 * static_cast<double>(bytes) / r.t.median_us / 1e3 : 0;
    r.source = "copy";
    r.detail = "device-to-device copy of " + std::to_string(bytes >> 20) + " MiB through pk::copy_async, median " +
               fmt_time(r.t.median_us) + " (" + r.t.clock + "), bytes read + written";
    return {};
  }
  if (s.backend() == backend_kind::cuda && have_cublas()) {
    PK_TRY(cublas_gemm_bf16(s, gemm_size, warmup, reps, r.t));
    const double flops = 2.0 * gemm_size * static_cast<double>(gemm_size) * gemm_size;
    r.value = r.t.median_us > 0 ? flops / r.t.median_us / 1e6 : 0;
    r.source = "cuBLAS GEMM";
    r.detail = "bf16 GEMM " + std::to_string(gemm_size) + "^3, fp32 accumulation (cublasGemmEx), median " +
               fmt_time(r.t.median_us) + " (" + r.t.clock + ")";
    return {};
  }
  r.value = s.device().peak_bf16_tflops;
  r.source = "datasheet";
  r.detail = "datasheet dense bf16 peak of " + s.device().name + " (device database, peak_bf16_tflops)" +
             (s.backend() == backend_kind::cuda ? ": this build has no cuBLAS" : ": no cuBLAS GEMM on this backend");
  return {};
}

//! One problem: the family set to it, planned, prepared, every run measured and verified, the anchors timed.
void run_problem(const family_registration& reg, const stream& s, const bench_options& o, int warmup, int reps,
                 std::size_t index, progress& bar, bench_row& row) {
  const auto f = reg.make();
  CLI::App app{"bench problem", reg.name};
  f->add_problem_options(app);
  try {
    std::vector<std::string> args(row.problem.args.rbegin(), row.problem.args.rend());  // CLI11 takes them reversed
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    row.error = std::string("the family's bench grid does not parse: ") + e.what();
    return;
  }
  if (auto st = f->validate(); !st) {
    row.error = st.to_string();
    return;
  }
  row.problem_json = f->problem_json();
  f->use_code(s.code_target());
  const archdb::plan model = f->plan(s.device());
  if (model.index < 0) {
    row.error = "no candidate fits " + s.device().name;
    return;
  }
  bar.update(index, row.problem.label, 0, 1, "preparing inputs and the CPU reference");
  if (auto st = f->prepare(s, o.seed); !st) {
    row.error = st.to_string();
    return;
  }
  std::vector<int> order = {-1};
  for (const int i : rank_fitting(model, 0)) order.push_back(i);
  std::vector<bench_anchor> anchors;
  if (auto st = f->anchors(s, anchors); !st) {
    row.error = st.to_string();
    return;
  }
  const std::size_t total = order.size();
  const measure_progress on_run = [&](std::size_t k, std::size_t, const std::string& name, const measured_run* done) {
    if (!done) bar.update(index, row.problem.label, k, total, (k == 0 ? "checking plan " : "checking candidate ") + name);
  };
  // The anchors are timed interleaved with pk's runs (measure_runs), so that pk/anchor is not a ratio of
  // two moments of the device.
  std::vector<std::function<status()>> anchor_works;
  for (const auto& a : anchors)
    anchor_works.emplace_back([&a]() -> status {
      if (auto st = a.launch(); !st) return {st.code(), a.name + ": " + st.message()};
      return {};
    });
  std::vector<timing> anchor_t;
  if (auto st = measure_runs(*f, s, model, order, warmup, reps, on_run, row.runs, anchor_works, &anchor_t); !st) {
    row.error = st.to_string();
    return;
  }
  row.work = f->bound() == bench_bound::matrix ? f->flops() : f->bytes_moved();
  for (std::size_t k = 0; k < row.runs.size(); ++k) {
    const auto& r = row.runs[k];
    if (!r.v.pass) row.wrong.push_back(k == 0 ? "plan " + r.name : r.name);
    else if (k > 0 && (row.best < 0 || r.t.median_us < row.runs[static_cast<std::size_t>(row.best)].t.median_us))
      row.best = static_cast<int>(k);
  }
  for (std::size_t a = 0; a < anchors.size(); ++a) row.anchors.emplace_back(anchors[a].name, anchor_t[a]);
}

//! The achieved rate of `work` done in `us`, in the family's unit.
double rate(bench_bound b, double work, double us) {
  if (us <= 0 || work <= 0) return 0;
  return b == bench_bound::matrix ? work / us / 1e6 : work / us / 1e3;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[64];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return b;
}

struct report {
  std::string family, device, stream_text, clock, date, commit, command;
  bool emulated = false;
  bench_bound bound = bench_bound::memory;
  std::string unit;
  roofline roof;
  std::vector<bench_row> rows;
};

std::string check_text(const bench_row& r) {
  if (!r.error.empty()) return "ERROR: " + r.error;
  if (r.wrong.empty()) return "ok (" + std::to_string(r.runs.size()) + " runs verified)";
  std::string s = "WRONG RESULT: ";
  for (std::size_t i = 0; i < r.wrong.size(); ++i) s += (i ? ", " : "") + r.wrong[i];
  return s;
}

std::string cell(std::string s) {
  for (std::size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
  return s;
}

std::string markdown(const report& rep) {
  std::ostringstream o;
  o << "# pk bench " << rep.family << " on " << rep.device << "\n\n"
    << "- device: " << rep.stream_text << "\n"
    << "- date: " << rep.date << "\n"
    << "- pk commit: " << rep.commit << "\n"
    << "- command: `" << rep.command << "`\n"
    << "- clock: " << rep.clock << "\n"
    << "- roofline (" << rep.roof.source << "): " << (rep.roof.value > 0 ? sig(rep.roof.value) + " " + rep.unit : "unknown") << ", "
    << rep.roof.detail << "\n";
  if (rep.emulated)
    o << "- **emulator**: the times are host wall-clock time of the emulation and say nothing about " << rep.device
      << "; no anchors\n";
  o << "\nplanned: the library's plan for the problem (pk run); best: the fastest verified candidate, each forced by "
       "name; every run checked once on a poisoned output, then the runs and the anchors of a problem timed "
       "interleaved (one repetition of each in turn; on a GPU enqueued while the stream is held, so the device's "
       "time alone is timed); times are medians; planned/best and pk/anchor are ratios of "
       "times (below 1: pk is faster).\n\n";
  o << "| problem | planned | planned time | best candidate | best time | planned/best | pk " << rep.unit
    << " | % of roofline | anchor | anchor time | pk/anchor | check |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rep.rows) {
    o << "| " << cell(r.problem.label) << " | ";
    if (r.runs.empty()) {
      o << "- | - | - | - | - | - | - | - | - | - | " << cell(check_text(r)) << " |\n";
      continue;
    }
    const auto& p = r.runs.front();
    o << cell(p.name) << " | " << fmt_time(p.t.median_us) << " | ";
    if (r.best >= 0) {
      const auto& b = r.runs[static_cast<std::size_t>(r.best)];
      o << cell(b.name) << " | " << fmt_time(b.t.median_us) << " | " << fixed(p.t.median_us / b.t.median_us, 2) << " | ";
    } else {
      o << "- | - | - | ";
    }
    const double achieved = rate(rep.bound, r.work, p.t.median_us);
    o << sig(achieved) << " | " << (rep.roof.value > 0 ? fixed(100 * achieved / rep.roof.value, 1) + "%" : "-") << " | ";
    if (!r.anchors.empty()) {
      const auto& [name, t] = r.anchors.front();
      o << cell(name) << " | " << fmt_time(t.median_us) << " | " << fixed(p.t.median_us / t.median_us, 2) << " | ";
    } else {
      o << "- | - | - | ";
    }
    o << cell(check_text(r)) << " |\n";
  }
  return o.str();
}

json timing_json(const timing& t) {
  return {{"median_us", t.median_us}, {"min_us", t.min_us}, {"max_us", t.max_us}, {"reps", t.us.size()}, {"clock", t.clock}};
}

json to_json(const report& rep) {
  json rows = json::array();
  for (const auto& r : rep.rows) {
    json runs = json::array();
    for (std::size_t k = 0; k < r.runs.size(); ++k) {
      const auto& m = r.runs[k];
      runs.push_back({{"name", m.name}, {"planned", k == 0}, {"predicted_us", m.predicted_us}, {"time", timing_json(m.t)},
                      {"achieved", rate(rep.bound, r.work, m.t.median_us)}, {"verified", m.v.pass}, {"verification", m.v.detail}});
    }
    json anchors = json::array();
    for (const auto& [name, t] : r.anchors)
      anchors.push_back({{"name", name}, {"time", timing_json(t)}, {"achieved", rate(rep.bound, r.work, t.median_us)}});
    json j = {{"label", r.problem.label}, {"args", r.problem.args}, {"problem", r.problem_json}, {"runs", runs},
              {"anchors", anchors}, {"wrong", r.wrong}, {"error", r.error.empty() ? json(nullptr) : json(r.error)},
              {rep.bound == bench_bound::matrix ? "flops" : "bytes", r.work}};
    if (!r.runs.empty()) {
      const double achieved = rate(rep.bound, r.work, r.runs.front().t.median_us);
      j["planned"] = r.runs.front().name;
      j["achieved"] = achieved;
      j["fraction_of_roofline"] = rep.roof.value > 0 ? json(achieved / rep.roof.value) : json(nullptr);
    }
    j["best"] = r.best >= 0 ? json(r.runs[static_cast<std::size_t>(r.best)].name) : json(nullptr);
    rows.push_back(std::move(j));
  }
  return {{"family", rep.family},
          {"device", rep.device},
          {"stream", rep.stream_text},
          {"emulated", rep.emulated},
          {"clock", rep.clock},
          {"date", rep.date},
          {"commit", rep.commit},
          {"command", rep.command},
          {"unit", rep.unit},
          {"roofline", {{"value", rep.roof.value}, {"source", rep.roof.source}, {"detail", rep.roof.detail}}},
          {"rows", rows}};
}

std::string svg(const report& rep) {
  std::vector<plot_row> rows;
  for (const auto& r : rep.rows) {
    plot_row p{r.problem.label, {}};
    if (!r.runs.empty()) p.values.emplace_back("pk (planned)", rate(rep.bound, r.work, r.runs.front().t.median_us));
    if (r.best >= 0)
      p.values.emplace_back("best candidate", rate(rep.bound, r.work, r.runs[static_cast<std::size_t>(r.best)].t.median_us));
    if (!r.anchors.empty()) {
      const std::string& name = r.anchors.front().first;
      p.values.emplace_back("anchor (" + name.substr(0, name.find(' ')) + ")",
                            rate(rep.bound, r.work, r.anchors.front().second.median_us));
    }
    rows.push_back(std::move(p));
  }
  const std::string title = "pk bench " + rep.family + " on " + rep.device + (rep.emulated ? " (emulator: host time)" : "");
  return svg_bar_plot(title, rep.unit, rep.roof.value, "roofline: " + rep.roof.source + " " + sig(rep.roof.value) + " " + rep.unit, rows);
}

status write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) return {errc::internal, "--out: cannot write " + p.string()};
  return {};
}

}  // namespace

int cmd_bench(const family_registration& reg, const stream& s, const bench_options& o, const std::string& command_line) {
  const auto grid_family = reg.make();
  report rep;
  rep.family = reg.name;
  rep.emulated = s.backend() == backend_kind::host;
  rep.device = s.device().name;
  rep.stream_text = s.describe();
  rep.date = now_utc();
  rep.commit = git_commit;
  rep.command = command_line;
  rep.bound = grid_family->bound();
  rep.unit = rep.bound == bench_bound::matrix ? "TFLOP/s" : "GB/s";
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) {
      std::cerr << "pk: error: --out " << o.out_dir << ": cannot create the folder: " << ec.message() << "\n";
      return 1;
    }
  }
  const bool quick = o.quick || rep.emulated;
  if (rep.emulated)
    std::cerr << "pk bench: the emulator impersonating " << rep.device
              << ": the times are host wall-clock time of the emulation and say nothing about the device; no anchors"
              << (o.quick ? "" : "; the --quick grid") << "\n";
  const int warmup = rep.emulated ? 0 : gpu_warmup;
  const int reps = o.reps > 0 ? o.reps : (rep.emulated ? 1 : gpu_reps);
  for (auto& p : grid_family->bench_grid(quick)) rep.rows.push_back({std::move(p), {}, {}, -1, {}, 0, {}, {}});

  progress bar(rep.rows.size());
  bar.note("roofline: " + std::string(rep.bound == bench_bound::matrix ? "matrix" : "copy") + " on " + rep.stream_text);
  if (auto st = measure_roofline(s, rep.bound, warmup, reps, rep.roof); !st) {
    bar.finish();
    std::cerr << "pk: error: roofline: " << st.to_string() << "\n";
    return 1;
  }
  for (std::size_t j = 0; j < rep.rows.size(); ++j) {
    run_problem(reg, s, o, warmup, reps, j, bar, rep.rows[j]);
    if (!rep.rows[j].error.empty() || !rep.rows[j].wrong.empty())
      bar.note(rep.rows[j].problem.label + ": " + check_text(rep.rows[j]));
  }
  bar.finish();
  rep.clock = rep.roof.t.clock;
  for (const auto& r : rep.rows)
    if (!r.runs.empty()) rep.clock = r.runs.front().t.clock;
  if (rep.clock.empty()) rep.clock = rep.emulated ? "host wall clock (emulator)" : "datasheet only";

  const std::string md = markdown(rep);
  if (o.json) std::cout << to_json(rep).dump(2) << "\n";
  else std::cout << md;
  if (!o.out_dir.empty()) {
    const std::filesystem::path dir(o.out_dir);
    for (const auto& st : {write_file(dir / ("bench-" + rep.family + ".md"), md), write_file(dir / ("bench-" + rep.family + ".svg"), svg(rep))})
      if (!st) {
        std::cerr << "pk: error: " << st.to_string() << "\n";
        return 1;
      }
    std::cerr << "pk bench: wrote " << (dir / ("bench-" + rep.family + ".md")).string() << " and "
              << (dir / ("bench-" + rep.family + ".svg")).string() << "\n";
  }
  bool error = false, wrong = false;
  for (const auto& r : rep.rows) {
    error = error || !r.error.empty();
    wrong = wrong || !r.wrong.empty();
  }
  return error ? 1 : wrong ? 2 : 0;
}

}  // namespace pk::tool
