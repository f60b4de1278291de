// pk — the command-line tool: the device database, plans with their reasons, tuning, and runs verified
// against a CPU reference. `pk --help` and `pk <command> --help` describe every option; --json gives
// machine-readable output; the exit status is non-zero on any error or failed verification.
#include "bench.hpp"
#include "family.hpp"
#include "measure.hpp"
#include "resource_check.hpp"
#include <pk/timing.hpp>

#include <pk/archdb/device.hpp>
#include <pk/archdb/occupancy.hpp>
#include <pk/archdb/planner.hpp>
#include <pk/archdb/tuning_cache.hpp>
#include <pk/config.hpp>
#include <pk/runtime.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

namespace pk::tool {
namespace {

using json = nlohmann::json;

int fail(const status& s) {
  std::cerr << "pk: error: " << s.to_string() << "\n";
  return 1;
}

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

std::string sci(double v) {
  std::ostringstream o;
  o << std::setprecision(4) << v;
  return o.str();
}

//! A duration in the unit that keeps it readable: "38.2 us", "77.1 ms", "1.52 s".
std::string fmt_time(double us) {
  if (us >= 1e6) return sci(us * 1e-6) + " s";
  if (us >= 1e3) return sci(us * 1e-3) + " ms";
  return sci(us) + " us";
}

std::string pad(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

//! The GPU this process would use (CUDA or HIP device 0), if any.
bool detect_gpu(stream& s) {
  if (!default_stream(s)) return false;
  return s.backend() != backend_kind::host;
}

status find_device(const std::string& name, const archdb::device_desc*& out) {
  out = archdb::find_device(name);
  if (out) return {};
  std::string names;
  for (const auto& d : archdb::all_devices()) names += (names.empty() ? "" : ", ") + d.name;
  return {errc::not_found, "device '" + name + "' is not in the database (known: " + names + ")"};
}

//! The stream a run uses: the emulator impersonating --device, else the GPU, else the default emulator.
status select_stream(const std::string& device, stream& s) {
  if (!device.empty()) {
    const archdb::device_desc* d = nullptr;
    PK_TRY(find_device(device, d));
    return stream::host(d->name, s);
  }
  return default_stream(s);
}

// ------------------------------------------------------------------------------------------------
// pk devices / pk show

int cmd_devices(bool as_json) {
  stream gpu;
  const bool have_gpu = detect_gpu(gpu);
  const std::string detected = have_gpu ? gpu.device().name : "";
  std::vector<const archdb::device_desc*> rows;
  for (const auto& d : archdb::all_devices()) rows.push_back(&d);
  if (have_gpu && gpu.device().synthesized) rows.push_back(&gpu.device());

  if (as_json) {
    json arr = json::array();
    for (const auto* d : rows)
      arr.push_back({{"name", d->name},
                     {"vendor", d->vendor_id == archdb::vendor::nvidia ? "nvidia" : "amd"},
                     {"isa", archdb::name_of(d->isa)},
                     {"sm_count", d->sm_count},
                     {"warp_size", d->warp_size},
                     {"smem_per_block_optin", d->smem_per_block_optin},
                     {"smem_per_sm", d->smem_per_sm},
                     {"l2_bytes", d->l2_bytes},
                     {"mem_bw_gbps", d->mem_bw_gbps},
                     {"peak_bf16_tflops", d->peak_bf16_tflops},
                     {"synthesized", d->synthesized},
                     {"detected", have_gpu && d->name == detected}});
    json j = {{"devices", arr}, {"detected", have_gpu ? json(gpu.describe()) : json(nullptr)}};
    if (!archdb::load_errors().empty()) j["load_errors"] = archdb::load_errors();
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "  " << pad("device", 18) << pad("vendor", 7) << pad("isa", 8) << pad("SMs/CUs", 8) << pad("warp", 5)
            << pad("smem/block", 11) << pad("smem/SM", 9) << pad("L2", 9) << pad("GB/s", 7) << "bf16 TFLOPS\n";
  for (const auto* d : rows) {
    const bool mark = have_gpu && d->name == detected;
    std::cout << (mark ? "* " : "  ") << pad(d->name, 18) << pad(d->vendor_id == archdb::vendor::nvidia ? "nvidia" : "amd", 7)
              << pad(archdb::name_of(d->isa), 8) << pad(std::to_string(d->sm_count), 8)
              << pad(std::to_string(d->warp_size), 5) << pad(fixed(static_cast<double>(d->smem_per_block_optin) / 1024, 0) + " KiB", 11)
              << pad(fixed(static_cast<double>(d->smem_per_sm) / 1024, 0) + " KiB", 9)
              << pad(fixed(static_cast<double>(d->l2_bytes) / (1024.0 * 1024.0), 0) + " MiB", 9)
              << pad(fixed(d->mem_bw_gbps, 0), 7) << fixed(d->peak_bf16_tflops, 1)
              << (d->synthesized ? "  (synthesized from the device query)" : "") << "\n";
  }
  std::cout << (have_gpu ? "* detected: " + gpu.describe() : std::string("no GPU detected: runs use the emulator (pk run --device NAME)"))
            << "\n";
  for (const auto& e : archdb::load_errors()) std::cout << "warning: " << e << "\n";
  std::cout << "sources and marks of every number: pk show DEVICE\n";
  return 0;
}

int cmd_show(const std::string& name, bool as_json) {
  const archdb::device_desc* d = nullptr;
  if (auto st = find_device(name, d); !st) return fail(st);
  if (as_json) {
    json j = {{"name", d->name},
              {"aliases", d->aliases},
              {"vendor", d->vendor_id == archdb::vendor::nvidia ? "nvidia" : "amd"},
              {"isa", archdb::name_of(d->isa)},
              {"synthesized", d->synthesized},
              {"sm_count", d->sm_count},
              {"warp_size", d->warp_size},
              {"max_threads_per_sm", d->max_threads_per_sm},
              {"max_warps_per_sm", d->max_warps_per_sm},
              {"max_blocks_per_sm", d->max_blocks_per_sm},
              {"max_threads_per_block", d->max_threads_per_block},
              {"regs_per_sm", d->regs_per_sm},
              {"regs_per_block", d->regs_per_block},
              {"max_regs_per_thread", d->max_regs_per_thread},
              {"vgprs_per_simd_lane", d->vgprs_per_simd_lane},
              {"max_waves_per_simd", d->max_waves_per_simd},
              {"smem_per_sm", d->smem_per_sm},
              {"smem_per_block", d->smem_per_block},
              {"smem_per_block_optin", d->smem_per_block_optin},
              {"smem_reserved_per_block", d->smem_reserved_per_block},
              {"smem_alloc_granularity", d->smem_alloc_granularity},
              {"l2_bytes", d->l2_bytes},
              {"llc_bytes", d->llc_bytes},
              {"mem_bw_gbps", d->mem_bw_gbps},
              {"peak_tflops", {{"bf16", d->peak_bf16_tflops}, {"fp16", d->peak_fp16_tflops}, {"fp32", d->peak_fp32_tflops}, {"fp64", d->peak_fp64_tflops}}},
              {"sources", d->sources},
              {"marks", d->marks}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << archdb::describe(*d);
  std::cout << "\nsources:\n";
  for (const auto& [field, src] : d->sources) {
    if (field.rfind("calibration.", 0) == 0) continue;  // listed with their values above
    const auto m = d->marks.find(field);
    std::cout << "  " << pad(field, 28) << src << (m != d->marks.end() ? "  [" + m->second + "]" : "") << "\n";
  }
  return 0;
}

// ------------------------------------------------------------------------------------------------
// pk plan

json plan_json(const archdb::device_desc& d, const family& f, const archdb::plan& p) {
  json arr = json::array();
  for (std::size_t i = 0; i < p.all.size(); ++i) {
    const auto& e = p.all[i];
    json c = {{"name", e.name}, {"fits", e.fits}, {"reason", e.reason}};
    if (e.fits) {
      const auto& occ = e.occ;
      c["predicted_us"] = e.predicted_us;
      c["blocks_per_sm"] = occ.blocks_per_sm;
      c["occupancy"] = occ.occupancy;
      c["limiter"] = occ.limiter;
    }
    c["chosen"] = static_cast<int>(i) == p.index;
    arr.push_back(std::move(c));
  }
  json j = {{"device", d.name}, {"isa", archdb::name_of(d.isa)}, {"family", f.name()}, {"problem", f.problem_json()},
            {"candidates", arr}, {"why", p.why}};
  if (p.index >= 0)
    j["chosen"] = {{"name", p.name},
                   {"index", p.index},
                   {"predicted_us", p.predicted_us},
                   {"source", p.from_tuning_cache ? "tuning cache" : "model"},
                   {"blocks_per_sm", p.occ.blocks_per_sm},
                   {"occupancy", p.occ.occupancy},
                   {"limiter", p.occ.limiter}};
  else
    j["chosen"] = nullptr;
  return j;
}

void print_plan(const archdb::device_desc& d, const family& f, const archdb::plan& p) {
  std::cout << "plan " << f.name() << " on " << d.name << " (" << archdb::name_of(d.isa) << ", " << d.sm_count
            << (d.vendor_id == archdb::vendor::nvidia ? " SMs" : " CUs") << "): " << f.problem_text() << "\n\n";
  std::size_t w = 10;
  for (const auto& e : p.all) w = std::max(w, e.name.size() + 2);
  std::cout << "  " << pad("candidate", w) << pad("fits", 6) << pad("blocks/SM", 10) << pad("occupancy", 10)
            << "predicted\n";
  for (std::size_t i = 0; i < p.all.size(); ++i) {
    const auto& e = p.all[i];
    std::cout << (static_cast<int>(i) == p.index ? "> " : "  ") << pad(e.name, w) << pad(e.fits ? "yes" : "no", 6);
    if (e.fits) {
      const auto& occ = e.occ;
      std::cout << pad(std::to_string(occ.blocks_per_sm), 10) << pad(fixed(occ.occupancy * 100, 0) + "%", 10)
                << sci(e.predicted_us) << " us\n";
    } else {
      std::cout << pad("-", 10) << pad("-", 10) << "-\n";
    }
    std::cout << "      " << e.reason << "\n";
  }
  if (p.index < 0) {
    std::cout << "\nno candidate fits " << d.name << "\n";
    return;
  }
  std::cout << "\nchosen: " << p.name << (p.from_tuning_cache ? " (from tuning cache)" : " (model)") << ", "
            << (p.from_tuning_cache ? "measured " : "predicted ") << sci(p.predicted_us) << " us\n";
  // The why text without its per-candidate lines (the table above has them).
  std::istringstream why(p.why);
  for (std::string line; std::getline(why, line) && line.rfind("  - ", 0) != 0;) std::cout << "why: " << line << "\n";
}

// ------------------------------------------------------------------------------------------------
// Options shared by the verbs that take a family.

struct verb_options {
  std::string device;
  bool json = false;
  int warmup = -1, reps = -1, top = 0;
  std::uint64_t seed = 0x5eed;
  bool store_emulated = false;
};

int cmd_plan(family& f, const verb_options& o) {
  if (auto st = f.validate(); !st) return fail(st);
  const archdb::device_desc* d = nullptr;
  stream s;
  if (!o.device.empty()) {
    if (auto st = find_device(o.device, d); !st) return fail(st);
  } else {
    if (auto st = default_stream(s); !st) return fail(st);
    d = &s.device();
    if (!o.json) std::cerr << "pk: no --device: planning for " << s.describe() << "\n";
  }
  const archdb::plan p = f.plan(*d);
  if (o.json) std::cout << plan_json(*d, f, p).dump(2) << "\n";
  else print_plan(*d, f, p);
  return p.index >= 0 ? 0 : 1;
}

int cmd_run(family& f, const verb_options& o) {
  if (auto st = f.validate(); !st) return fail(st);
  stream s;
  if (auto st = select_stream(o.device, s); !st) return fail(st);
  const bool emulated = s.backend() == backend_kind::host;
  f.use_code(s.code_target());
  const archdb::plan p = f.plan(s.device());
  if (p.index < 0) return fail(unsupported("no candidate fits " + s.device().name + ": " + p.why));
  if (!o.json) std::cerr << "pk: preparing " << f.problem_text() << " on " << s.describe() << "\n";
  if (auto st = f.prepare(s, o.seed); !st) return fail(st);
  // The emulator is a correctness path: one run. GPUs: warm-up, then the median of event-timed runs.
  const int warmup = o.warmup >= 0 ? o.warmup : (emulated ? 0 : 2);
  const int reps = o.reps > 0 ? o.reps : (emulated ? 1 : 10);
  timing t;
  if (auto st = time_work(s, warmup, reps, [&] { return f.launch(s, -1); }, t); !st) return fail(st);
  verification v;
  if (auto st = f.verify(s, p, v); !st) return fail(st);
  const double gbps = t.median_us > 0 ? f.bytes_moved() / (t.median_us * 1e-6) / 1e9 : 0;
  if (o.json) {
    json j = {{"family", f.name()},
              {"problem", f.problem_json()},
              {"stream", s.describe()},
              {"emulated", emulated},
              {"plan", {{"name", p.name}, {"source", p.from_tuning_cache ? "tuning cache" : "model"}, {"predicted_us", p.predicted_us}, {"why", p.why}}},
              {"time", {{"median_us", t.median_us}, {"min_us", t.min_us}, {"max_us", t.max_us}, {"reps", reps}, {"warmup", warmup}, {"clock", t.clock}}},
              {"verification", v.detail},
              {"pass", v.pass}};
    if (!emulated) j["time"]["gbps"] = gbps;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "run " << f.name() << " " << f.problem_text() << " on " << s.describe() << "\n"
              << "plan:   " << p.name << (p.from_tuning_cache ? " (from tuning cache), measured " : " (model), predicted ")
              << fmt_time(p.predicted_us) << " on " << s.device().name << "\n"
              << "time:   median " << fmt_time(t.median_us) << " of " << reps << " (min " << fmt_time(t.min_us) << ", max "
              << fmt_time(t.max_us) << "; " << t.clock << ")";
    if (emulated) std::cout << ": emulation time, not a performance figure";
    else std::cout << ", " << fixed(gbps, 1) << " GB/s";
    std::cout << "\ncheck:  ";
    if (v.detail.contains("result"))
      std::cout << "result " << std::setprecision(10) << v.detail.value("result", 0.0) << " vs CPU reference "
                << v.detail.value("reference", 0.0) << ": ";
    std::cout << "error " << sci(v.detail.value("abs_error", 0.0)) << ", bound " << sci(v.detail.value("bound", 0.0))
              << " -> " << (v.pass ? "PASS" : "FAIL") << "\n        rule: " << v.detail.value("rule", std::string{}) << "\n";
  }
  return v.pass ? 0 : 2;
}

int cmd_tune(family& f, const verb_options& o) {
  if (auto st = f.validate(); !st) return fail(st);
  stream s;
  if (auto st = select_stream(o.device, s); !st) return fail(st);
  const bool emulated = s.backend() == backend_kind::host;
  const archdb::device_desc& d = s.device();
  f.use_code(s.code_target());
  const archdb::plan model = f.plan(d);
  // Rank the fitting candidates by the model's prediction; measure the top ones.
  const std::vector<int> order = rank_fitting(model, o.top);
  if (order.empty()) return fail(unsupported("no candidate fits " + d.name + ": " + model.why));
  const int warmup = o.warmup >= 0 ? o.warmup : 3;
  const int reps = o.reps > 0 ? o.reps : (emulated ? 3 : 25);
  const archdb::tuning_key key = f.tuning_key(d);
  std::cerr << "pk tune " << f.name() << " " << f.problem_text() << " on " << s.describe() << "\n"
            << "key: device=" << key.device << " family=" << key.family << " candidate_set=" << key.candidate_set
            << " bucket=" << key.bucket << "\n";
  if (auto st = f.prepare(s, o.seed); !st) return fail(st);
  const auto t0 = std::chrono::steady_clock::now();
  const auto so_far = [&] {
    return fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1) + " s";
  };
  const measure_progress progress = [&](std::size_t k, std::size_t n, const std::string& name, const measured_run* r) {
    if (!r) {
      std::cerr << "[" << k + 1 << "/" << n << "] checking " << name << " (" << so_far() << ")\n";
      if (k + 1 == n)
        std::cerr << "timing the " << n << " candidates interleaved: " << warmup << " warm-up runs each, then at least " << reps
                  << " rounds of one timed run each\n";
      return;
    }
    std::cerr << "[" << k + 1 << "/" << n << "] " << pad(name, 24) << " median " << fmt_time(r->t.median_us) << " (min "
              << fmt_time(r->t.min_us) << ", max " << fmt_time(r->t.max_us) << ", " << r->t.us.size() << " reps)"
              << (r->v.pass ? ", verified" : ", WRONG RESULT: excluded") << " (" << so_far() << ")\n";
  };
  std::vector<measured_run> runs;
  if (auto st = measure_runs(f, s, model, order, warmup, reps, progress, runs); !st) return fail(st);
  json measured = json::array();
  int best = -1;
  double best_us = 0;
  for (const auto& r : runs) {
    measured.push_back({{"name", r.name}, {"median_us", r.t.median_us}, {"min_us", r.t.min_us}, {"max_us", r.t.max_us},
                        {"predicted_us", r.predicted_us}, {"verified", r.v.pass}, {"clock", r.t.clock}});
    if (r.v.pass && (best < 0 || r.t.median_us < best_us)) {
      best = r.index;
      best_us = r.t.median_us;
    }
  }
  if (best < 0) return fail({errc::internal, "no candidate produced a verified result"});
  const std::string winner = model.all[static_cast<std::size_t>(best)].name;
  std::string stored = "not stored";
  bool store_ok = true;
  if (emulated && !o.store_emulated) {
    stored = "not stored: emulator timings say nothing about " + d.name + " (--store-emulated stores them anyway)";
  } else {
    std::string err;
    auto& cache = archdb::tuning_cache::instance();
    store_ok = cache.store(key, {winner, best_us, ""}, &err);
    stored = store_ok ? "stored in " + cache.path() : "not stored: " + err;
  }
  if (o.json) {
    std::cout << json{{"family", f.name()}, {"problem", f.problem_json()}, {"stream", s.describe()},
                      {"key", {{"device", key.device}, {"family", key.family}, {"candidate_set", key.candidate_set}, {"bucket", key.bucket}}},
                      {"measured", measured}, {"winner", winner}, {"winner_us", best_us},
                      {"model_choice", model.name}, {"stored", stored}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "winner: " << winner << " " << fmt_time(best_us) << " (model's choice: " << model.name << ")\n"
              << stored << "\n";
  }
  return store_ok ? 0 : 1;
}

int cmd_candidates(const std::string& arch_name, const std::string& family_name, bool as_json) {
  archdb::arch a = archdb::arch::generic;
  if (!archdb::parse_arch(arch_name.c_str(), a)) return fail(invalid_argument("--arch " + arch_name + ": unknown arch"));
  json arr = json::array();
  for (const auto& reg : families()) {
    if (!family_name.empty() && family_name != reg.name) continue;
    const auto f = reg.make();
    for (const auto& e : f->manifest(a))
      arr.push_back({{"family", e.family}, {"candidate", e.candidate}, {"instance", e.instance}, {"symbol", e.symbol},
                     {"threads_per_block", e.planned.threads_per_block}, {"regs_per_thread", e.planned.regs_per_thread},
                     {"static_smem", e.planned.static_smem}, {"dynamic_smem", e.planned.dynamic_smem},
                     {"declares_spills", e.declares_spills}, {"min_registers", e.min_registers}});
  }
  if (as_json) {
    std::cout << json{{"schema", manifest_schema}, {"arch", archdb::name_of(a)}, {"candidates", arr}}.dump(2) << "\n";
    return 0;
  }
  std::cout << "candidates compiled for " << archdb::name_of(a) << ":\n";
  for (const auto& c : arr)
    std::cout << "  " << pad(c["instance"].get<std::string>(), 40) << pad(std::to_string(c["threads_per_block"].get<int>()) + " threads", 14)
              << "dynamic smem " << c["dynamic_smem"].get<std::int64_t>() << " B, symbol *" << c["symbol"].get<std::string>() << "*\n";
  return 0;
}

}  // namespace
}  // namespace pk::tool

int main(int argc, char** argv) {
  using namespace pk::tool;
  CLI::App app{"pk: device database, plans, tuning and verified runs of pk's kernels (pk " PK_VERSION_STRING ")", "pk"};
  app.require_subcommand(1);
  app.set_version_flag("--version", PK_VERSION_STRING);

  bool json_out = false;
  auto* devices = app.add_subcommand("devices", "list the device database; the detected GPU is marked with *");
  devices->add_flag("--json", json_out, "machine-readable output");

  std::string show_name;
  auto* show = app.add_subcommand("show", "every field of one device with its source");
  show->add_option("DEVICE", show_name, "device name or alias (e.g. \"RTX 3090\", H200)")->required();
  show->add_flag("--json", json_out, "machine-readable output");

  std::string cand_arch, cand_family;
  auto* cands = app.add_subcommand("candidates", "the compiled kernel instances of an arch (the resource check's manifest)");
  cands->add_option("--arch", cand_arch, "arch (sm_80, sm_86, sm_90a, gfx942, ...)")->required();
  cands->add_option("--family", cand_family, "only this family");
  cands->add_flag("--json", json_out, "machine-readable output");

  resource_check_options rc;
  auto* rcheck = app.add_subcommand(
      "resource-check",
      "check compiler resource reports (<tu>.<arch>.ptxas.log, <tu>.<gfx>.remarks) against every device of the arch");
  rcheck->add_option("REPORTS", rc.reports_dir, "folder holding the reports")->required()->check(CLI::ExistingDirectory);
  rcheck->add_option("--manifest", rc.manifests,
                     "candidate manifest(s) (pk candidates --json); default: this build's candidates per arch")
      ->check(CLI::ExistingFile);
  rcheck->add_flag("--allow-missing", rc.allow_missing, "a candidate absent from every report of its arch is a warning, not an error");
  rcheck->add_flag("--verbose,-v", rc.verbose, "also print every check that passed");
  rcheck->add_flag("--json", json_out, "machine-readable output");

  // plan / tune / run: one subcommand per family under each verb, each with its own family object.
  verb_options vo;
  struct verb_family {
    CLI::App* cmd;
    std::unique_ptr<family> f;
    std::string verb;
  };
  std::vector<verb_family> vf;
  const std::map<std::string, std::string> verbs = {
      {"plan", "candidates, fit or reject reasons, the chosen plan and its predicted time"},
      {"tune", "measure the top candidates on the device (warm-up, median of event-timed runs) and cache the winner"},
      {"run", "run on the GPU (or with --device NAME on the emulator impersonating NAME), verify against a CPU reference"}};
  for (const char* verb : {"plan", "tune", "run"}) {
    auto* v = app.add_subcommand(verb, verbs.at(verb));
    v->require_subcommand(1);
    for (const auto& reg : families()) {
      auto f = reg.make();
      auto* c = v->add_subcommand(reg.name, f->summary());
      f->add_problem_options(*c);
      const std::string dev_help = std::string(verb) == "plan"
                                       ? "device from the database (default: the detected GPU, else the emulator's default)"
                                       : "emulate this database device instead of using the GPU";
      c->add_option("--device", vo.device, dev_help);
      c->add_flag("--json", json_out, "machine-readable output");
      if (std::string(verb) != "plan") {
        c->add_option("--warmup", vo.warmup, "untimed runs first (default: run 2 on a GPU, 0 on the emulator; tune 3)");
        c->add_option("--reps", vo.reps, "timed runs, median reported (default: run 10 on a GPU, 1 on the emulator; tune 25 / 3)");
        c->add_option("--seed", vo.seed, "seed of the random input")->capture_default_str();
      }
      if (std::string(verb) == "tune") {
        c->add_option("--top", vo.top, "measure only the K best candidates by the model (default: all that fit)");
        c->add_flag("--store-emulated", vo.store_emulated,
                    "store the winner even when measured on the emulator (tests of the cache; emulator times do not predict GPUs)");
      }
      vf.push_back({c, std::move(f), verb});
    }
  }

  // bench: one subcommand per family; the problems are the family's benchmark grid (no problem options).
  bench_options bo;
  std::string bench_device;
  std::vector<std::pair<CLI::App*, const family_registration*>> bench_cmds;
  auto* bench = app.add_subcommand(
      "bench", "benchmark the family's grid: plan vs every candidate, rooflines and anchors; markdown table and SVG plot");
  bench->require_subcommand(1);
  for (const auto& reg : families()) {
    auto* c = bench->add_subcommand(reg.name, reg.make()->summary());
    c->add_option("--device", bench_device, "emulate this database device instead of using the GPU (implies --quick)");
    c->add_flag("--quick", bo.quick, "a few small problems instead of the full grid");
    c->add_option("--reps", bo.reps, "timed runs per measurement, median reported (default: 25 on a GPU, 1 on the emulator)")
        ->check(CLI::PositiveNumber);
    c->add_option("--out", bo.out_dir, "write DIR/bench-FAMILY.md (table and header) and DIR/bench-FAMILY.svg (plot)");
    c->add_option("--seed", bo.seed, "seed of the random inputs")->capture_default_str();
    c->add_flag("--json", bo.json, "the same data as JSON on stdout instead of the markdown table");
    bench_cmds.emplace_back(c, &reg);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (devices->parsed()) return cmd_devices(json_out);
  if (show->parsed()) return cmd_show(show_name, json_out);
  if (cands->parsed()) return cmd_candidates(cand_arch, cand_family, json_out);
  if (rcheck->parsed()) {
    rc.json = json_out;
    return resource_check_main(rc);
  }
  for (const auto& [cmd, reg] : bench_cmds) {
    if (!cmd->parsed()) continue;
    std::string line = "pk";
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,") ==
                                           std::string::npos;
      line += " " + (plain ? a : "'" + a + "'");
    }
    pk::stream s;
    if (auto st = select_stream(bench_device, s); !st) return fail(st);
    return cmd_bench(*reg, s, bo, line);
  }
  vo.json = json_out;
  for (auto& e : vf) {
    if (!e.cmd->parsed()) continue;
    if (e.verb == "plan") return cmd_plan(*e.f, vo);
    if (e.verb == "tune") return cmd_tune(*e.f, vo);
    return cmd_run(*e.f, vo);
  }
  std::cerr << app.help();
  return 1;
}
